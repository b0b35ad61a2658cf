"""Pages opened in a real headless browser (Debian's chromium, driven by Playwright): seconds."""

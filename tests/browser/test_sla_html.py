"""The page of ``segcompact sla --format html`` as a person sees it: opened in headless chromium.

A string check cannot tell that an SVG has no size, that a chart lost its marks or that the page
throws; a browser can. It is Debian's chromium (``make chromium``), not Playwright's download.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from segcompact.erasure.html import render_html
from segcompact.erasure.report import build
from tests.support.ledger import HOUR, MINUTE, SLAS, T0, delete_row, round_row

BREACHED_KEY = "b"


def sample_report() -> dict[str, Any]:
    """Three topics over three hours: met, missed and pending deletions, erasure rounds; built
    from ledger rows the way ``segcompact sla`` builds it."""
    deletes = [
        delete_row("users", 10, T0, 20 * MINUTE),
        delete_row("users", 11, T0 + 5 * MINUTE, 35 * MINUTE),
        delete_row("users", 17, T0 + 10 * MINUTE, 75 * MINUTE, key=BREACHED_KEY),
        delete_row("users", 30, T0 + 70 * MINUTE, 25 * MINUTE),
        delete_row("users", 42, T0 + 150 * MINUTE, None),
        delete_row("orders", 7, T0 + 30 * MINUTE, 90 * MINUTE, partition=3),
        delete_row("audit", 1, T0 + 160 * MINUTE, None),
    ]
    rounds = [
        round_row("users", 1, T0, 50 * MINUTE),
        round_row("orders", 1, T0 + 60 * MINUTE, None, partition=3),
    ]
    scope = {
        "config": "conf/compactor.toml",
        "sources": ["/data/kafka"],
        "state_table": "/data/state",
        "ledger_table": "/data/state_deletion_ledger",
        "output": "/data/compacted",
        "checkpoint": "/data/checkpoint",
        "topics": [{"topic": "orders", "sla_ms": 2 * HOUR}, {"topic": "*", "sla_ms": HOUR}],
    }
    upstream = [{"location": "/data/kafka/users-0", "note": "source segments: not owned"}]
    return build(deletes, rounds, _sla, T0 + 3 * HOUR, upstream, scope)  # fmt: skip


def empty_report() -> dict[str, Any]:
    return build([], [], _sla, T0)


def _sla(topic: str) -> int:
    return SLAS.get(topic, HOUR)


@dataclass
class Opened:
    page: Page
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("chromium not found: run `make chromium` (`make test` runs it) to install it")
    profile = tmp_path_factory.mktemp("chromium-profile")
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--no-first-run"]  # fmt: skip
    with sync_playwright() as pw:
        # Playwright refuses --user-data-dir in args; a persistent context is how it takes one,
        # and a fresh folder keeps a developer's own chromium profile out of the test.
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=executable, headless=True, args=args
        )
        yield context
        context.close()


def _open(browser: BrowserContext, html: str, path: Path) -> Iterator[Opened]:
    path.write_text(html, encoding="utf-8")
    opened = Opened(browser.new_page())
    opened.page.on("console", lambda m: m.type == "error" and opened.errors.append(m.text))
    opened.page.on("pageerror", lambda e: opened.errors.append(f"page error: {e}"))
    opened.page.on("request", lambda r: opened.requests.append(r.url))
    opened.page.goto(path.as_uri(), wait_until="load")
    yield opened
    opened.page.close()


@pytest.fixture
def sample_page(browser: BrowserContext, tmp_path: Path) -> Iterator[Opened]:
    yield from _open(browser, render_html(sample_report()), tmp_path / "sla.html")


@pytest.fixture
def empty_page(browser: BrowserContext, tmp_path: Path) -> Iterator[Opened]:
    yield from _open(browser, render_html(empty_report()), tmp_path / "empty.html")


def _assert_loaded_cleanly(opened: Opened, screenshot: Path) -> None:
    opened.page.screenshot(path=screenshot, full_page=True)
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    assert opened.errors == []
    # Self-contained: the only thing loaded is the page itself.
    assert [u for u in opened.requests if not u.startswith("file:")] == []


def _assert_visible_box(page: Page, selector: str) -> None:
    box = page.locator(selector).first.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0, selector


def test_sample_report_renders_its_charts(sample_page: Opened, tmp_path: Path) -> None:
    page, report = sample_page.page, sample_report()
    _assert_loaded_cleanly(sample_page, tmp_path / "sla.png")

    headline = page.locator("#headline")
    assert headline.is_visible()
    assert headline.inner_text() == (
        "5 of 9 erasures met their deadline (55.6 %); 3 pending, 1 missed."
    )
    for chart in ("#tte-chart", "#stage-chart"):
        _assert_visible_box(page, chart)
    completed = [r for r in (*report["deletions"], *report["overwrites"]) if r["completed_at"]]
    assert page.locator("#tte-chart circle.mark").count() == len(completed) == 6
    assert page.locator("#tte-chart circle.mark.breached").count() == 1
    _assert_visible_box(page, "#tte-chart circle.mark.breached")
    # Every mark is drawn inside the chart, not clipped off its edges.
    chart = page.locator("#tte-chart").bounding_box()
    assert chart is not None
    for mark in page.locator("#tte-chart circle.mark").all():
        box = mark.bounding_box()
        assert box is not None and box["width"] > 0
        assert chart["x"] <= box["x"] and box["x"] + box["width"] <= chart["x"] + chart["width"]
        assert chart["y"] <= box["y"] and box["y"] + box["height"] <= chart["y"] + chart["height"]
    # One dashed line per deadline, labelled; axes labelled.
    assert page.locator("#tte-chart line.sla").count() == 2
    labels = page.locator("#tte-chart text.sla-label").all_text_contents()
    assert sorted(labels) == ["deadline of audit, users: 1 h", "deadline of orders: 2 h"]
    for label in page.locator("svg text.axis-label").all():
        box = label.bounding_box()
        assert box is not None and box["width"] > 0 and label.is_visible()
    assert page.locator("#tte-chart text.axis-label").all_text_contents() == [
        "when the value was deleted or replaced (UTC, from 2026-11-18)",
        "time to erasure",
    ]
    stages = [v for p in report["partitions"] for v in (p["stage_ms"] or {}).values() if v]
    assert page.locator("#stage-chart rect.stage").count() == len(stages)
    _assert_visible_box(page, "#stage-chart rect.stage")
    assert "min" in " ".join(page.locator("#stage-chart text.tick").all_text_contents())

    breach = page.locator("tr.breached")
    assert breach.count() == 1
    assert breach.first.is_visible()
    assert BREACHED_KEY * 12 in breach.first.inner_text()
    assert "old copies for Kafka deleted" in breach.first.inner_text()
    assert page.get_by_text("/data/kafka/users-0").is_visible()
    assert page.get_by_text("Kafka's source segments").is_visible()
    assert page.locator("#glossary dt").count() >= 10
    assert page.get_by_text("Vacuum", exact=True).is_visible()


def test_empty_report_loads(empty_page: Opened, tmp_path: Path) -> None:
    _assert_loaded_cleanly(empty_page, tmp_path / "empty.png")
    assert empty_page.page.locator("#nothing").is_visible()
    assert empty_page.page.locator("svg").count() == 0

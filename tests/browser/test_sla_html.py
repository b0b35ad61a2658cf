"""The page of ``segcompact sla --format html`` as a person sees it: opened in headless chromium.

A string check cannot tell that an SVG has no size, that a chart lost its marks or that the page
throws; a browser can. It is Debian's chromium (``make chromium``), not Playwright's download.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from segcompact.erasure.html import render_html

T0 = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
HOUR_MS = 3_600_000
BREACHED_KEY = "b" * 64


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _ts(minutes: float) -> str:
    return (
        (T0 + timedelta(minutes=minutes)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _deletion(topic: str, partition: int, offset: int, start: float, took: float | None,
              sla_min: float = 60, key: str | None = None) -> dict[str, Any]:  # fmt: skip
    done = None if took is None else start + took
    status = "pending" if took is None else "breached" if took > sla_min else "met"
    return {
        "topic": topic, "partition": partition, "key_hash": key or _hash(f"key-{offset}"),
        "offset": offset, "appended_at": _ts(start), "deadline": _ts(start + sla_min),
        "completed_at": None if done is None else _ts(done), "status": status,
        "breach_stage": "vacuumed" if status == "breached" else None,
        "stages": {"seen": _ts(start + 1), "merged": _ts(start + 2),
                   "versions_removed": None if done is None else _ts(done)},
    }  # fmt: skip


def sample_report() -> dict[str, Any]:
    """Three partitions: met, breached and pending deletions, overwrite rounds, one breach."""
    deletions = [
        _deletion("users", 0, 10, 0, 20),
        _deletion("users", 0, 11, 5, 35),
        _deletion("users", 0, 17, 10, 75, key=BREACHED_KEY),
        _deletion("users", 0, 42, 100, None),
        _deletion("orders", 3, 7, 0, 90, sla_min=120),
        _deletion("audit", 0, 1, 110, None),
    ]
    overwrites = [
        {"topic": "users", "partition": 0, "appended_from": _ts(0), "appended_until": _ts(30),
         "deadline": _ts(60), "completed_at": _ts(50), "status": "met", "breach_stage": None,
         "stages": {"seen": _ts(31)}},
        {"topic": "orders", "partition": 3, "appended_from": _ts(30), "appended_until": _ts(60),
         "deadline": _ts(150), "completed_at": None, "status": "pending", "breach_stage": None,
         "stages": {}},
    ]  # fmt: skip
    stage_ms = {"seen": 10, "merged": 2000, "purged": 0, "vacuumed": 50_000,
                "materialized": 9000, "versions_removed": 100}  # fmt: skip
    partitions = [
        {"topic": "users", "partition": 0, "sla_ms": HOUR_MS, "pending": 1, "met": 3,
         "breached": 1, "time_to_erasure_ms": {"p50": 2_100_000, "p99": 4_400_000,
         "max": 4_500_000}, "stage_ms": stage_ms,
         "oldest_pending": {"key_hash": _hash("key-42"), "offset": 42, "appended_at": _ts(100),
                            "deadline": _ts(160)}},
        {"topic": "orders", "partition": 3, "sla_ms": 2 * HOUR_MS, "pending": 1, "met": 1,
         "breached": 0, "time_to_erasure_ms": {"p50": 5_400_000, "p99": 5_400_000,
         "max": 5_400_000}, "stage_ms": {"seen": 5, "merged": 300_000},
         "oldest_pending": None},
        {"topic": "audit", "partition": 0, "sla_ms": HOUR_MS, "pending": 1, "met": 0,
         "breached": 0, "time_to_erasure_ms": None, "stage_ms": {},
         "oldest_pending": {"key_hash": _hash("key-1"), "offset": 1, "appended_at": _ts(110),
                            "deadline": _ts(170)}},
    ]  # fmt: skip
    return {
        "generated_at": _ts(120),
        "partitions": partitions,
        "deletions": deletions,
        "overwrites": overwrites,
        "upstream": [{"location": "/data/kafka/users-0", "note": "source segments: not owned"}],
    }


def empty_report() -> dict[str, Any]:
    return {"generated_at": _ts(0), "partitions": [], "deletions": [], "overwrites": [],
            "upstream": []}  # fmt: skip


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

    for chart in ("#tte-chart", "#stage-chart"):
        _assert_visible_box(page, chart)
    rows = report["deletions"] + report["overwrites"]
    completed = [r for r in rows if r["completed_at"]]
    assert page.locator("#tte-chart circle.mark").count() == len(completed)
    assert page.locator("#tte-chart circle.mark.breached").count() == sum(
        r["status"] == "breached" for r in completed
    )
    _assert_visible_box(page, "#tte-chart circle.mark.breached")
    # One dashed SLA line for each partition that has a completed row.
    assert page.locator("#tte-chart line.sla").count() == len(
        {(r["topic"], r["partition"]) for r in completed}
    )
    stages = [v for p in report["partitions"] for v in (p["stage_ms"] or {}).values() if v]
    assert page.locator("#stage-chart rect.stage").count() == len(stages)
    _assert_visible_box(page, "#stage-chart rect.stage")

    breach = page.locator("tr.breached")
    assert breach.count() == 1
    assert breach.first.is_visible()
    assert BREACHED_KEY[:12] in breach.first.inner_text()
    assert "vacuumed" in breach.first.inner_text()
    assert page.get_by_text("/data/kafka/users-0").is_visible()


def test_empty_report_loads(empty_page: Opened, tmp_path: Path) -> None:
    _assert_loaded_cleanly(empty_page, tmp_path / "empty.png")
    assert empty_page.page.locator("#nothing").is_visible()
    assert empty_page.page.locator("svg").count() == 0

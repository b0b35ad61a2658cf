"""``segcompact sla``: the deletion-SLA report (pending, met and breached erasures) in text,
JSON or HTML."""

from __future__ import annotations

import json
import os

from segcompact.app.preconditions import load
from segcompact.app.reply import Reply
from segcompact.app.session import ensured
from segcompact.app.upstream import upstream
from segcompact.clock import job_clock
from segcompact.delta.sql import open_sql
from segcompact.erasure.ledger_reads import ledger_rows, ledger_views
from segcompact.erasure.report import build, text
from segcompact.erasure.summary import scope
from segcompact.unmerged import judged


def sla(config_path: str, *, form: str, output: str | None, jvm_output: str | None) -> Reply:
    """The report in ``form`` (text, json, html), written to ``output`` when given."""
    config = load(config_path)
    views = {**ledger_views(config), "partitions": config.state.partitions_table}
    sql = open_sql(views, config.storage, ensured(config, jvm_output))
    deletes, rounds = ledger_rows(sql)
    now = job_clock().now_ms()
    unread = judged(config, sql, now)
    # A record kept for later names every location in full, not from where it was run.
    full = config.with_base_dir(os.getcwd())
    copies = upstream(full, {(r["topic"], r["partition"]) for r in (*deletes, *rounds)})
    where = scope(full, os.path.abspath(config_path))
    report = build(deletes, rounds, config.sla_ms, now, copies, where, unread)
    if form == "json":
        shown = json.dumps(report, indent=2)
    elif form == "html":
        from segcompact.erasure.html import render_html

        shown = render_html(report)
    else:
        shown = text(report)
    if output is None:
        return Reply((shown,))
    with open(output, "w", encoding="utf-8") as f:
        f.write(shown + "\n")
    return Reply()

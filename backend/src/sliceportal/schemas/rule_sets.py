"""Rule-set diffs: what a deploy or rollback changes on one backend, per data-plane table."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, Field

# Entries listed per table and kind; the counts always cover every entry. A large import
# (tens of thousands of UEs) must not make the diff response megabytes long.
DiffLimit = Annotated[int, Query(ge=0, le=5000, description="entries listed per table and kind (counts cover all)")]


class DiffSidePublic(BaseModel):
    label: str = Field(description='"rule set N", "preview" or "nothing deployed"')
    number: int | None = Field(description="the rule-set number; null for the preview or an empty side")
    digest: str | None = Field(description="the compiled rules' digest (what the data plane reports holding)")
    active: bool = Field(description="this side is the rule set in force on the backend now")


class ChangedEntry(BaseModel):
    before: dict[str, Any]
    after: dict[str, Any]


class TableDiffPublic(BaseModel):
    added: int
    removed: int
    changed: int
    added_entries: list[dict[str, Any]] = Field(description="up to `limit` of the added entries")
    removed_entries: list[dict[str, Any]]
    changed_entries: list[ChangedEntry] = Field(description="same key / match, other action or value")
    truncated: bool = Field(description="some entries are counted but not listed (raise `limit`)")


class RuleSetDiffPublic(BaseModel):
    backend_id: int
    base: DiffSidePublic = Field(description="the side the changes start from (older / in force)")
    target: DiffSidePublic = Field(description="the side the changes lead to")
    active_number: int | None = Field(description="the rule set in force on the backend now (null: none)")
    identical: bool = Field(description="both sides hold the same entries: deploying would change nothing")
    added: int
    removed: int
    changed: int
    tables: dict[str, TableDiffPublic] = Field(description="only the tables that differ")

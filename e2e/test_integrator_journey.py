"""Integrator journey: create an API key in the browser, call the API with it, revoke it (after a
confirmation naming it), with axe-core on every page and dialog visited."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from e2e.conftest import INTEGRATOR, Stack, login, shot
from e2e.test_accessibility import assert_accessible


def test_integrator_key(page: Page, stack: Stack) -> None:
    login(page, *INTEGRATOR)
    expect(page.get_by_role("heading", name="API keys")).to_be_visible()
    assert_accessible(page, "the integrator's API keys page")
    expect(page.get_by_role("link", name="API documentation (OpenAPI)")).to_have_attribute("href", "/api/v1/docs")
    page.get_by_label("Key name").fill("ci-pipeline")
    page.get_by_role("button", name="Create key").click()
    secret = page.get_by_test_id("api-key-secret").inner_text().strip()
    assert len(secret) >= 20
    shot(page, "api-keys")

    r = httpx.get(f"{stack.base_url}/api/v1/slice-types", headers={"X-Api-Key": secret})
    assert r.status_code == 200, r.text
    assert r.json()["count"] >= 1

    # Shown once: after hiding it, the page holds only the prefix.
    page.get_by_role("button", name="Hide the secret").click()
    expect(page.get_by_test_id("api-key-secret")).to_have_count(0)
    page.reload()
    expect(page.get_by_text(secret)).to_have_count(0)

    page.get_by_role("button", name="Revoke ci-pipeline").click()
    dialog = page.get_by_role("dialog", name="Revoke API key “ci-pipeline”?")
    expect(dialog).to_contain_text("is refused from now on")
    assert_accessible(page, "the revoke confirmation")
    dialog.get_by_role("button", name="Cancel").click()
    assert httpx.get(f"{stack.base_url}/api/v1/slice-types", headers={"X-Api-Key": secret}).status_code == 200
    page.get_by_role("button", name="Revoke ci-pipeline").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke key", exact=True).click()
    expect(page.get_by_role("table", name="API keys")).to_contain_text("revoked")
    assert httpx.get(f"{stack.base_url}/api/v1/slice-types", headers={"X-Api-Key": secret}).status_code == 401

// The API's objects as the tests need them: one valid object of each kind, changed only where a
// test cares (``backendRow({ health: "down" })``).
import type { Schemas } from "../api/client";

/** The signed-in user (GET /api/v1/users/me): an operator unless told otherwise. */
export function userMe(overrides: Partial<Schemas["UserPublic"]> = {}): Schemas["UserPublic"] {
  return {
    id: 1,
    username: "op",
    role: "operator",
    tenant_id: null,
    full_name: "",
    is_active: true,
    version: 1,
    ...overrides,
  };
}

/** A backend (GET /api/v1/backends/{id}): edge-1, P4Runtime, one path of 8 lanes, healthy, a 10 Gbit/s link. */
export function backendRow(overrides: Partial<Schemas["BackendPublic"]> = {}): Schemas["BackendPublic"] {
  return {
    id: 4,
    name: "edge-1",
    driver: "p4rt",
    health: "ok",
    health_detail: "",
    paths: 1,
    lanes: 8,
    capacity: {},
    options: {},
    created_at: "2026-11-23T09:00:00Z",
    version: 1,
    link_bps: 10e9,
    port_bps: {},
    accept_unenforced: [],
    ...overrides,
  };
}

/** A subscriber (GET /api/v1/subscribers): IMSI …001 at 10.47.0.1 of tenant 3, on slice 21. */
export function subscriberRow(overrides: Partial<Schemas["SubscriberPublic"]> = {}): Schemas["SubscriberPublic"] {
  return {
    id: 11,
    imsi: "001010000000001",
    ue_ip: "10.47.0.1",
    teids: [7],
    tenant_id: 3,
    slice_ids: [21],
    created_at: "2026-11-23T09:00:00Z",
    version: 1,
    ...overrides,
  };
}

/**
 * One backend's check in admission control's 409 (the problem's ``admission``): edge-1's 100 Mbit/s
 * link, refused; a test says which check failed (``guaranteed``, ``subscribers`` …).
 */
export function admissionCheck(overrides: Record<string, unknown> = {}) {
  return {
    backend_id: 4,
    backend_name: "edge-1",
    capacity_bps: 100e6,
    ok: false,
    delay: [],
    unpoliced: [],
    ports: [],
    subscribers: [],
    guaranteed: { terms: [], sum_bps: 0, limit_bps: 100e6, ok: true },
    ...overrides,
  };
}

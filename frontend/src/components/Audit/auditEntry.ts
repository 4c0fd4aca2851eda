// Reading an audit entry as a sentence: who did what to which object (by name, with a link
// while the object exists) and which fields changed from what to what.
import type { Schemas } from "../../api/client";
import { spoken } from "../common/spoken";

export type AuditEntry = Schemas["AuditEntryPublic"];
type Snapshot = Record<string, unknown> | null | undefined;

/** Object types as people say them (the API uses table names). */
export const OBJECT_TYPES: Record<string, string> = {
  tenant: "tenant",
  slice: "slice",
  service_class: "service class",
  subscriber: "subscriber",
  backend: "backend",
  user_account: "user",
  api_key: "API key",
  slice_type: "slice type",
  rule_set: "rule set",
  deployment: "deployment",
};

const VERBS: Record<string, string> = {
  create: "created",
  insert: "created",
  update: "changed",
  delete: "deleted",
  deploy: "deployed",
  rollback: "rolled back",
  reconcile: "reconciled",
  import: "imported",
  login: "logged in",
  login_locked: "was locked out",
  revoke: "revoked",
};

// Bookkeeping columns every row has; a diff of them says nothing to a reader.
const NOISE = new Set(["id", "created_at", "updated_at", "version", "password_hash", "key_hash", "secret_hash"]);

export function typeLabel(objectType: string): string {
  return OBJECT_TYPES[objectType] ?? spoken(objectType);
}

export function verb(action: string): string {
  return VERBS[action] ?? spoken(action);
}

/** Actions on the actor's own account ("bob logged in"): the sentence names no object. */
export const SELF_ACTIONS = new Set(["login", "login_locked"]);

/** Names the page knows of objects whose entries carry no snapshot (a deploy names its backend by id). */
export type KnownNames = Map<string, string>;
export const knownKey = (objectType: string, id: number) => `${objectType}:${id}`;

/**
 * The object's name as its snapshot holds it, else as the page knows it (``known``), else
 * "<type> #<id>" (an object deleted since, whose entries never carried its name).
 */
export function objectName(
  e: Pick<AuditEntry, "object_type" | "object_id" | "before" | "after">,
  known?: KnownNames,
): string {
  const snap = (e.after ?? e.before ?? {}) as Record<string, unknown>;
  for (const key of ["name", "username", "imsi", "prefix"]) {
    const v = snap[key];
    if (typeof v === "string" && v !== "") return v;
  }
  const named = e.object_id != null ? known?.get(knownKey(e.object_type, e.object_id)) : undefined;
  if (named) return named;
  return e.object_id != null ? `${typeLabel(e.object_type)} #${e.object_id}` : typeLabel(e.object_type);
}

/** Where the object lives in the portal; none once it was deleted. */
export function objectLink(
  e: Pick<AuditEntry, "action" | "object_type" | "object_id" | "before" | "after">,
  known?: KnownNames,
): string | null {
  if (e.action === "delete" || e.object_id == null) return null;
  const name = encodeURIComponent(objectName(e, known));
  switch (e.object_type) {
    case "tenant":
      return `/tenants?q=${name}`;
    case "slice":
      return `/slices/${e.object_id}`;
    case "backend":
      return `/backends/${e.object_id}`;
    case "subscriber":
      return `/subscribers?q=${name}`;
    default:
      return null;
  }
}

export interface FieldChange {
  field: string;
  before: string;
  after: string;
}

function show(v: unknown): string {
  if (v === undefined) return "—";
  if (v === null || v === "") return "(empty)";
  if (typeof v === "string") return v;
  const compact = JSON.stringify(v);
  // a longer object or list indented, so a reader sees its structure (the page shows it as a block)
  return typeof v === "object" && compact.length > 40 ? JSON.stringify(v, null, 2) : compact;
}

/** Fields that differ between the snapshots (all set fields for a create or delete). */
export function fieldDiff(before: Snapshot, after: Snapshot): FieldChange[] {
  const keys = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])].sort();
  const out: FieldChange[] = [];
  for (const k of keys) {
    if (NOISE.has(k)) continue;
    const b = before ? before[k] : undefined;
    const a = after ? after[k] : undefined;
    if (JSON.stringify(b) === JSON.stringify(a)) continue;
    if (!before && (a === null || a === "")) continue; // a create's empty fields are not news
    out.push({ field: k, before: before ? show(b) : "—", after: after ? show(a) : "—" });
  }
  return out;
}

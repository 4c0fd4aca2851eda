// Turning the API's problem+json into words a person can act on, attached to the form field
// that caused them: 0-based JSON paths become 1-based item numbers and field labels, database
// constraint text becomes a sentence, pydantic prefixes are dropped.
import type { ApiProblem, FieldError } from "../../api/problem";
import { spoken } from "./spoken";

/** Human names of the API's field names (one table for every form and the CSV import). */
export const FIELD_LABELS: Record<string, string> = {
  name: "Name",
  vni: "VXLAN VNI",
  vlan: "VLAN ID",
  ue_pool: "UE address pool",
  contact: "Contact",
  description: "Description",
  imsi: "IMSI",
  ue_ip: "UE address",
  teids: "TEIDs",
  tenant: "Tenant",
  tenant_id: "Tenant",
  slices: "Slices",
  slice_ids: "Slices",
  slice_type_id: "Slice type",
  services: "Service class",
  driver: "Driver",
  options: "Options",
  username: "Username",
  password: "Password",
  role: "Role",
  file: "File",
  rule_set: "Rule set",
  version: "Version",
  body: "Request",
};

/** Check constraints (the API may pass their text through) → what the user must change. */
const CHECK_CONSTRAINTS: Record<string, string> = {
  ck_tenant_vni_range: "VXLAN VNI must be between 1 and 16777215.",
  ck_tenant_vlan_range: "VLAN ID must be between 1 and 4094.",
};

export function labelOf(field: string, labels: Record<string, string> = FIELD_LABELS): string {
  const known = labels[field];
  if (known) return known;
  const words = spoken(field);
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The last named segment of a dotted path: "services.1.port_min" → "port_min"; "0" → "". */
export function leafField(path: string): string {
  const named = path.split(".").filter((p) => p !== "" && !/^\d+$/.test(p));
  return named[named.length - 1] ?? "";
}

/** "0.vni" → "Item 1 › VXLAN VNI"; "services.1.port_min" → "Service class 2 › Port min". */
export function humanPath(path: string, labels: Record<string, string> = FIELD_LABELS): string {
  const out: string[] = [];
  for (const part of path.split(".")) {
    if (part === "") continue;
    if (/^\d+$/.test(part)) {
      const n = Number(part) + 1; // the API counts from 0, people from 1
      const last = out.length - 1;
      if (last >= 0) out[last] = `${out[last]} ${n}`;
      else out.push(`Item ${n}`);
    } else {
      out.push(labelOf(part, labels));
    }
  }
  return out.join(" › ") || labelOf("body", labels);
}

function splitList(s: string): string[] {
  return s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
}

/** Database and validator wording → a sentence about the user's input. */
export function humanMessage(message: string, labels: Record<string, string> = FIELD_LABELS): string {
  const msg = message.trim();
  // PostgreSQL unique violation detail: Key (tenant_id, imsi)=(3, 001010000000001) already exists.
  const dup = /^Key \(([^)]*)\)=\((.*)\) already exists\.?$/.exec(msg);
  if (dup) {
    const cols = splitList(dup[1] ?? "");
    const vals = splitList(dup[2] ?? "");
    // The scoping column (tenant_id) is context, the last column is what the user typed.
    const i = cols.length - 1;
    const col = cols[i] ?? "value";
    const scoped = cols.length > 1 && cols.includes("tenant_id") ? " in this tenant" : "";
    return `${labelOf(col, labels)} ${vals[i] ?? ""} is already in use${scoped}; choose another.`.replace("  ", " ");
  }
  // Foreign-key violation detail: Key (tenant_id)=(99) is not present in table "tenant".
  const fk = /^Key \(([^)]*)\)=\((.*)\) is not present in table "?([^"]*)"?\.?$/.exec(msg);
  if (fk) return `${labelOf(fk[3] ?? fk[1] ?? "", labels)} ${fk[2] ?? ""} does not exist.`;
  // Foreign key still referenced: Key (id)=(3) is still referenced from table "slice".
  const ref = /^Key \(([^)]*)\)=\((.*)\) is still referenced from table "?([^"]*)"?\.?$/.exec(msg);
  if (ref) return `Still in use by at least one ${spoken(ref[3] ?? "object")}; remove that first.`;
  const check = /violates check constraint "([^"]+)"/.exec(msg);
  if (check) return CHECK_CONSTRAINTS[check[1] ?? ""] ?? "This value is out of the allowed range.";
  if (/^Field required$/i.test(msg)) return "Required.";
  return msg.replace(/^(Value error|Assertion failed), /, "");
}

export interface MappedErrors {
  /** Messages per form field (keyed by the form's field name). */
  byField: Record<string, string>;
  /** Errors no field of this form shows, in human words ("Item 2 › VLAN ID: …"). */
  other: string[];
}

/** Attach a problem's errors to the given form fields; the rest stay readable for an alert. */
export function mapProblem(
  problem: ApiProblem | null | undefined,
  fields: readonly string[],
  labels: Record<string, string> = FIELD_LABELS,
): MappedErrors {
  const byField: Record<string, string> = {};
  const other: string[] = [];
  for (const e of problem?.errors ?? []) {
    const leaf = leafField(e.field);
    const message = humanMessage(e.message, labels);
    if (fields.includes(leaf)) byField[leaf] = byField[leaf] ? `${byField[leaf]} ${message}` : message;
    else other.push(`${humanPath(e.field, labels)}: ${message}`);
  }
  return { byField, other };
}

const HEADER_ERRORS = new Set(["missing column", "unknown column", "column without a name"]);

/** One CSV import error as a row of the error table: the file's line (1 = header), column, words. */
export function csvRowError(e: FieldError, labels: Record<string, string> = FIELD_LABELS) {
  // a header error names the column as the file spells it (or must spell it): "ue_addr", not "Ue addr";
  // an empty header cell by its place ("column 2")
  const header = HEADER_ERRORS.has(e.message);
  const column = header ? e.field : labelOf(leafField(e.field) || e.field, labels);
  return { line: e.line ?? null, column, message: humanMessage(e.message, labels) };
}

/** The problem's headline without raw database text: detail only when it reads as a sentence. */
export function problemSummary(problem: ApiProblem): string {
  if (problem.errors.length > 0) {
    return problem.errors.length === 1 ? "One value needs a change." : `${problem.errors.length} values need a change.`;
  }
  return humanMessage(problem.detail) || `HTTP ${problem.status}`;
}

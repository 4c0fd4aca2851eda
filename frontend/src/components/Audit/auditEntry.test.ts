import { describe, expect, it } from "vitest";
import { fieldDiff, knownKey, objectLink, objectName, SELF_ACTIONS, typeLabel, verb } from "./auditEntry";

describe("audit entries in words", () => {
  const update = {
    action: "update",
    object_type: "tenant",
    object_id: 3,
    before: { id: 3, name: "acme", vni: 100, vlan: null, version: 1, updated_at: "a" },
    after: { id: 3, name: "acme", vni: 200, vlan: 12, version: 2, updated_at: "b" },
  };
  it("names the object from its snapshot and links to it", () => {
    expect(objectName(update)).toBe("acme");
    expect(objectLink(update)).toBe("/tenants?q=acme");
    expect(objectLink({ ...update, object_type: "slice" })).toBe("/slices/3");
    expect(objectName({ object_type: "user_account", object_id: 9, before: null, after: { username: "bob" } })).toBe(
      "bob",
    );
    expect(objectName({ object_type: "rule_set", object_id: 4, before: null, after: null })).toBe("rule set #4");
  });
  it("does not link a deleted object", () => {
    expect(objectLink({ ...update, action: "delete", after: null })).toBeNull();
  });
  it("diffs only the fields that changed, without bookkeeping columns", () => {
    expect(fieldDiff(update.before, update.after)).toEqual([
      { field: "vlan", before: "(empty)", after: "12" },
      { field: "vni", before: "100", after: "200" },
    ]);
  });
  it("lists a create's set fields and a delete's old values", () => {
    expect(fieldDiff(null, { id: 1, name: "x", contact: null })).toEqual([{ field: "name", before: "—", after: "x" }]);
    expect(fieldDiff({ name: "x", lanes: [1, 2] }, null)).toEqual([
      { field: "lanes", before: "[1,2]", after: "—" },
      { field: "name", before: "x", after: "—" },
    ]);
  });
  it("shows a structured value as indented JSON, a short one inline", () => {
    const sla = { delay_p99_ms: 20, loss_pct: 0.1, lanes: [{ lane: 1, min_mbps: 10 }] };
    const [change] = fieldDiff({ sla: null }, { sla });
    expect(change?.after).toBe(JSON.stringify(sla, null, 2));
    expect(change?.after.split("\n").length).toBeGreaterThan(5);
    expect(fieldDiff({ lanes: [1] }, { lanes: [1, 2] })[0]?.after).toBe("[1,2]");
  });
  it("says actions and types as people do", () => {
    expect(verb("update")).toBe("changed");
    expect(verb("rollback")).toBe("rolled back");
    expect(typeLabel("user_account")).toBe("user");
    expect(typeLabel("something_new")).toBe("something new");
  });
});

describe("names without a snapshot", () => {
  it("come from what the page knows (a deploy names its backend by id)", () => {
    const deploy = { action: "deploy", object_type: "backend", object_id: 3, before: null, after: null };
    expect(objectName(deploy)).toBe("backend #3");
    expect(objectName(deploy, new Map([[knownKey("backend", 3), "bmv2-lab"]]))).toBe("bmv2-lab");
  });
  it("a login names no object: the actor logged in", () => {
    expect(SELF_ACTIONS.has("login")).toBe(true);
    expect(verb("login")).toBe("logged in");
  });
});

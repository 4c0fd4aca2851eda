import { describe, expect, it } from "vitest";
import { ApiProblem } from "../../api/problem";
import { csvRowError, humanMessage, humanPath, leafField, mapProblem, problemSummary } from "./fieldErrors";

describe("humanPath", () => {
  it("turns 0-based list positions into 1-based item numbers with labels", () => {
    expect(humanPath("0.vni")).toBe("Item 1 › VXLAN VNI");
    expect(humanPath("services.1.name")).toBe("Service class 2 › Name");
    expect(humanPath("ue_pool")).toBe("UE address pool");
  });
  it("names unknown fields readably instead of showing snake_case", () => {
    expect(humanPath("port_min")).toBe("Port min");
    expect(humanPath("")).toBe("Request");
  });
});

describe("leafField", () => {
  it("is the last named segment of a path", () => {
    expect(leafField("body.0.vni")).toBe("vni");
    expect(leafField("services.3.ports.0")).toBe("ports");
    expect(leafField("2")).toBe("");
  });
});

describe("humanMessage", () => {
  it("translates PostgreSQL unique violations, naming the value", () => {
    expect(humanMessage("Key (vni)=(100) already exists.")).toBe("VXLAN VNI 100 is already in use; choose another.");
    expect(humanMessage("Key (tenant_id, imsi)=(3, 001010000000001) already exists.")).toBe(
      "IMSI 001010000000001 is already in use in this tenant; choose another.",
    );
  });
  it("translates foreign-key and check-constraint text", () => {
    expect(humanMessage('Key (tenant_id)=(99) is not present in table "tenant".')).toBe("Tenant 99 does not exist.");
    expect(humanMessage('Key (id)=(4) is still referenced from table "service_class".')).toBe(
      "Still in use by at least one service class; remove that first.",
    );
    expect(humanMessage('new row for relation "tenant" violates check constraint "ck_tenant_vlan_range"')).toBe(
      "VLAN ID must be between 1 and 4094.",
    );
  });
  it("drops validator prefixes and keeps plain sentences", () => {
    expect(humanMessage("Value error, 10.0.0.0/33 is not a network")).toBe("10.0.0.0/33 is not a network");
    expect(humanMessage("Field required")).toBe("Required.");
    expect(humanMessage("Input should be less than or equal to 4094")).toBe(
      "Input should be less than or equal to 4094",
    );
  });
  it("never lets raw Key (...) text through for any unique violation", () => {
    for (const raw of ["Key (name)=(acme) already exists.", "Key (tenant_id, ue_ip)=(1, 10.0.0.1) already exists"]) {
      expect(humanMessage(raw)).not.toMatch(/Key \(/);
    }
  });
});

describe("mapProblem", () => {
  const problem = new ApiProblem(409, "Conflict", "Key (vni)=(7) already exists.", [
    { field: "vni", message: "Key (vni)=(7) already exists." },
    { field: "0.vlan", message: "Input should be less than or equal to 4094" },
    { field: "services.0.port_min", message: "Field required" },
  ]);
  it("attaches errors to the form's fields by their leaf name", () => {
    const { byField, other } = mapProblem(problem, ["vni", "vlan"]);
    expect(byField).toEqual({
      vni: "VXLAN VNI 7 is already in use; choose another.",
      vlan: "Input should be less than or equal to 4094",
    });
    expect(other).toEqual(["Service class 1 › Port min: Required."]);
  });
  it("lists everything with human paths when the form shows no field", () => {
    expect(mapProblem(problem, []).other[1]).toBe("Item 1 › VLAN ID: Input should be less than or equal to 4094");
  });
  it("handles no problem", () => {
    expect(mapProblem(null, ["vni"])).toEqual({ byField: {}, other: [] });
  });
});

describe("csvRowError and problemSummary", () => {
  it("keeps the file's 1-based line and names the column", () => {
    expect(csvRowError({ field: "ue_ip", message: "10.9.0.1 is outside tenant a's UE pool", line: 3 })).toEqual({
      line: 3,
      column: "UE address",
      message: "10.9.0.1 is outside tenant a's UE pool",
    });
  });
  it("names a header's missing or unknown column as the file spells it", () => {
    expect(csvRowError({ field: "ue_addr", message: "unknown column", line: 1 })).toEqual({
      line: 1,
      column: "ue_addr",
      message: "unknown column",
    });
    expect(csvRowError({ field: "ue_ip", message: "missing column", line: 1 })).toEqual({
      line: 1,
      column: "ue_ip",
      message: "missing column",
    });
    expect(csvRowError({ field: "column 2", message: "column without a name", line: 1 })).toEqual({
      line: 1,
      column: "column 2",
      message: "column without a name",
    });
  });
  it("summarises without database text", () => {
    expect(problemSummary(new ApiProblem(409, "Conflict", "Key (name)=(x) already exists."))).toBe(
      "Name x is already in use; choose another.",
    );
    expect(problemSummary(new ApiProblem(422, "Validation failed", "", [{ field: "a", message: "b" }]))).toBe(
      "One value needs a change.",
    );
  });
});

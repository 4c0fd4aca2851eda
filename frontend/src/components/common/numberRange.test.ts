import { describe, expect, it } from "vitest";
import { rangeError } from "./numberRange";

describe("rangeError", () => {
  it("accepts values inside the range and an empty optional value", () => {
    expect(rangeError("VLAN ID", 4094, 1, 4094)).toBeUndefined();
    expect(rangeError("VLAN ID", "", 1, 4094)).toBeUndefined();
  });
  it("says what is wrong instead of clamping", () => {
    expect(rangeError("VLAN ID", 5000, 1, 4094)).toBe("VLAN ID must be between 1 and 4094; 5000 is out of range.");
    expect(rangeError("VLAN ID", 0, 1, 4094)).toMatch(/0 is out of range/);
    expect(rangeError("VNI", "1.5", 1, 10)).toBe("VNI must be a whole number; 1.5 is not.");
    expect(rangeError("VNI", "abc", 1, 10)).toBe("VNI must be a number.");
    expect(rangeError("VNI", "", 1, 10, { required: true })).toBe("VNI is required.");
  });
});

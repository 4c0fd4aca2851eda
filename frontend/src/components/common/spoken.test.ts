import { describe, expect, it } from "vitest";
import { spoken } from "./spoken";

describe("spoken", () => {
  it("reads an identifier out with its underscores as spaces", () => {
    expect(spoken("out_of_sync")).toBe("out of sync");
    expect(spoken("queue_depth_pkts")).toBe("queue depth pkts");
    expect(spoken("deployed")).toBe("deployed");
  });
});

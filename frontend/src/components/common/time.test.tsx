import { describe, expect, it } from "vitest";
import { render, screen } from "@testing-library/react";
import { formatTime, Time } from "./time";

describe("formatTime", () => {
  it("shows the moment in the given zone with the zone named", () => {
    expect(formatTime("2026-11-23T10:17:30Z", "Europe/Berlin")).toBe("23 Nov 2026, 11:17:30 CET");
    expect(formatTime("2026-07-01T00:00:05Z", "America/New_York")).toBe("30 Jun 2026, 20:00:05 GMT-4");
    expect(formatTime("2026-11-23T10:17:30Z", "UTC")).toBe("23 Nov 2026, 10:17:30 UTC");
  });
  it("says so when there is no value and passes unparseable text through", () => {
    expect(formatTime(null)).toBe("—");
    expect(formatTime("soon")).toBe("soon");
  });
  it("renders a <time> with the exact UTC instant", () => {
    render(<Time value="2026-11-23T10:17:30.250+00:00" timeZone="UTC" />);
    const el = screen.getByText("23 Nov 2026, 10:17:30 UTC");
    expect(el.tagName).toBe("TIME");
    expect(el).toHaveAttribute("datetime", "2026-11-23T10:17:30.250Z");
  });
});

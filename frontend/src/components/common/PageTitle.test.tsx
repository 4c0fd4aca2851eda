import { describe, expect, it } from "vitest";
import { screen } from "@testing-library/react";
import { renderWithApp } from "../../test/render";
import { PageTitle, Section } from "./PageTitle";

describe("PageTitle and Section", () => {
  it("a page's sections are headed one level below the page, in a box with their content", () => {
    renderWithApp(
      <>
        <PageTitle>Backend edge-1</PageTitle>
        <Section title="Deploy" data-testid="deploy">
          <p>Deploy now</p>
        </Section>
      </>,
    );
    expect(screen.getByRole("heading", { level: 1, name: "Backend edge-1" })).toBeInTheDocument();
    const heading = screen.getByRole("heading", { level: 2, name: "Deploy" });
    expect(screen.getByTestId("deploy")).toContainElement(heading);
    expect(screen.getByTestId("deploy")).toHaveTextContent("Deploy now");
    expect(document.title).toContain("Backend edge-1");
  });
});

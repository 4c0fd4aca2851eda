import { describe, expect, it } from "vitest";
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Button } from "@mantine/core";
import { renderWithApp } from "../../test/render";
import { useFormDialog } from "./Dialog";

interface Thing {
  id: number;
  name: string;
}

/** A list page's New / Edit dialog around a form that says which row it edits. */
function Page() {
  const editor = useFormDialog<Thing>(
    (t) => (t ? `Edit thing ${t.name}` : "New thing"),
    (t, done) => (
      <>
        <p>{t ? `editing ${t.id}` : "creating"}</p>
        <Button onClick={done}>Save</Button>
      </>
    ),
  );
  return (
    <>
      <Button onClick={() => editor.open("new")}>New thing</Button>
      <Button onClick={() => editor.open({ id: 7, name: "seven" })}>Edit seven</Button>
      {editor.dialog}
    </>
  );
}

describe("useFormDialog", () => {
  it("opens for a new row or an existing one, titled for it, and the form closes it when done", async () => {
    const user = userEvent.setup();
    renderWithApp(<Page />);
    expect(screen.queryByRole("dialog")).not.toBeInTheDocument();

    await user.click(screen.getByRole("button", { name: "New thing" }));
    const created = await screen.findByRole("dialog", { name: "New thing" });
    expect(created).toHaveTextContent("creating");
    expect(within(created).getByRole("button", { name: "Close “New thing”" })).toBeInTheDocument();
    await user.click(within(created).getByRole("button", { name: "Save" }));
    expect(screen.queryByText("creating")).not.toBeInTheDocument();

    await user.click(screen.getByRole("button", { name: "Edit seven" }));
    const edited = await screen.findByRole("dialog", { name: "Edit thing seven" });
    expect(edited).toHaveTextContent("editing 7");
    await user.click(within(edited).getByRole("button", { name: "Close “Edit thing seven”" }));
    expect(screen.queryByText("editing 7")).not.toBeInTheDocument();
  });
});

// Mantine's Modal with a named close button (an icon-only button needs an accessible name), and
// the state of a list page's New / Edit dialog.
import { useState, type ReactNode } from "react";
import { Modal, type ModalProps } from "@mantine/core";

export function Dialog({ title, ...props }: ModalProps & { title: string }) {
  return <Modal title={title} closeButtonProps={{ "aria-label": `Close “${title}”` }} {...props} />;
}

/**
 * A page's New / Edit dialog: ``open("new")`` or ``open(row)`` shows it, titled ``title(row)``
 * (``row`` undefined for a new one), with ``form(row, done)``, which calls ``done`` once saved.
 */
export function useFormDialog<T>(
  title: (row: T | undefined) => string,
  form: (row: T | undefined, done: () => void) => ReactNode,
) {
  const [editing, setEditing] = useState<T | "new" | null>(null);
  const close = () => setEditing(null);
  const row = editing === "new" || editing === null ? undefined : editing;
  return {
    open: (what: T | "new") => setEditing(() => what),
    dialog: (
      <Dialog opened={editing !== null} onClose={close} title={title(row)}>
        {editing !== null && form(row, close)}
      </Dialog>
    ),
  };
}

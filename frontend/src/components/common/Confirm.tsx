// Confirmation for destructive or traffic-affecting actions: it names the object and says what
// happens, and the action runs only from the dialog's own button.
import { useState, type ReactNode } from "react";
import { Button, Group, Stack, Text } from "@mantine/core";
import { Dialog } from "./Dialog";
import { ProblemAlert } from "./QueryView";

export interface ConfirmSpec {
  /** "Delete tenant “acme”?" */
  title: string;
  /** What will happen, including what goes with it. */
  message: ReactNode;
  /** The button's words: "Delete tenant", "Roll back". */
  confirmLabel: string;
  color?: string;
  action: () => Promise<unknown>;
}

export function ConfirmDialog({ spec, onClose }: { spec: ConfirmSpec | null; onClose: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const close = () => {
    setError(null);
    onClose();
  };
  async function confirm() {
    if (!spec) return;
    setBusy(true);
    setError(null);
    try {
      await spec.action();
      close();
    } catch (e) {
      setError(e); // e.g. 409 "still used by …": the reason stays visible in the dialog
    } finally {
      setBusy(false);
    }
  }
  return (
    <Dialog opened={spec !== null} onClose={close} title={spec?.title ?? ""} centered>
      {spec && (
        <Stack>
          {typeof spec.message === "string" ? <Text size="sm">{spec.message}</Text> : spec.message}
          {error !== null && <ProblemAlert error={error} />}
          <Group justify="flex-end">
            <Button variant="default" onClick={close} data-autofocus>
              Cancel
            </Button>
            <Button color={spec.color ?? "red"} loading={busy} onClick={confirm}>
              {spec.confirmLabel}
            </Button>
          </Group>
        </Stack>
      )}
    </Dialog>
  );
}

/** State for one page's confirmation dialog: ask(spec) opens it, <ConfirmDialog> renders it. */
export function useConfirm() {
  const [spec, setSpec] = useState<ConfirmSpec | null>(null);
  return { ask: setSpec, dialog: <ConfirmDialog spec={spec} onClose={() => setSpec(null)} /> };
}

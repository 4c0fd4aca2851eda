import { useEffect, useState } from "react";
import { Notification, Stack } from "@mantine/core";
import { dismiss, subscribeNotes, type Note } from "./notify";

export function Notes() {
  const [notes, setNotes] = useState<Note[]>([]);
  useEffect(() => subscribeNotes(setNotes), []);
  return (
    <Stack pos="fixed" bottom={16} right={16} w={340} style={{ zIndex: 1000 }} aria-live="polite">
      {notes.map((n) => (
        // the close button needs a name, and Mantine's description grey (gray-6, 3.3:1) is below AA
        <Notification
          key={n.id}
          title={n.title}
          color={n.color}
          onClose={() => dismiss(n.id)}
          closeButtonProps={{ "aria-label": `Dismiss: ${n.title}` }}
          styles={{ description: { color: "var(--mantine-color-dimmed)" } }}>
          {n.message}
        </Notification>
      ))}
    </Stack>
  );
}

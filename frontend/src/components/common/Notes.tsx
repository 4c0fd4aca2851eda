import { useEffect, useState } from "react";
import { Notification, Stack } from "@mantine/core";
import { dismiss, subscribeNotes, type Note } from "./notify";

export function Notes() {
  const [notes, setNotes] = useState<Note[]>([]);
  useEffect(() => subscribeNotes(setNotes), []);
  return (
    <Stack pos="fixed" bottom={16} right={16} w={340} style={{ zIndex: 1000 }} aria-live="polite">
      {notes.map((n) => (
        <Notification key={n.id} title={n.title} color={n.color} onClose={() => dismiss(n.id)}>
          {n.message}
        </Notification>
      ))}
    </Stack>
  );
}

import type { ReactNode } from "react";
import { Group, Paper, Title, type PaperProps } from "@mantine/core";
import { textOf, useDocumentTitle } from "./documentTitle";

/** The page's heading; it also names the browser tab. */
export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  useDocumentTitle(textOf(children));
  return (
    <Group justify="space-between" mb="md" wrap="wrap">
      <Title order={1} size="h2">
        {children}
      </Title>
      {actions}
    </Group>
  );
}

/** A titled box on a page (a slice's "Services", a backend's "Deploy"), its heading one level below the page's. */
export function Section({ title, children, ...props }: { title: ReactNode; children: ReactNode } & PaperProps) {
  return (
    <Paper withBorder p="md" {...props}>
      <Title order={2} size="h4" mb="sm">
        {title}
      </Title>
      {children}
    </Paper>
  );
}

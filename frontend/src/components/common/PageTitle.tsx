import type { ReactNode } from "react";
import { Group, Title } from "@mantine/core";
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

import type { ReactNode } from "react";
import { Group, Title } from "@mantine/core";

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  return (
    <Group justify="space-between" mb="md" wrap="wrap">
      <Title order={1} size="h2">{children}</Title>
      {actions}
    </Group>
  );
}

// The application frame: header, role-aware navigation (collapses to a burger below tablet
// width), and the page outlet.
import { Suspense } from "react";
import { AppShell, Burger, Button, Group, Loader, NavLink, Text, Title } from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import { Link, Outlet, useLocation, useNavigate } from "react-router";
import { useSession, type Role } from "../../auth/session";

interface NavItem {
  to: string;
  label: string;
  roles: Role[];
}

export const NAV: NavItem[] = [
  { to: "/", label: "Overview", roles: ["operator"] },
  { to: "/dashboard", label: "SLA dashboard", roles: ["tenant", "operator"] },
  { to: "/slice-types", label: "Slice types", roles: ["operator", "tenant", "integrator"] },
  { to: "/tenants", label: "Tenants", roles: ["operator"] },
  { to: "/slices", label: "Slices", roles: ["operator", "tenant"] },
  { to: "/subscribers", label: "Subscribers", roles: ["operator"] },
  { to: "/backends", label: "Backends & deploy", roles: ["operator"] },
  { to: "/audit", label: "Audit log", roles: ["operator"] },
  { to: "/api-keys", label: "API keys", roles: ["integrator", "operator"] },
];

export function Shell() {
  const [opened, { toggle, close }] = useDisclosure();
  const { me, logout } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  const items = NAV.filter((n) => me && n.roles.includes(me.role));

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: "md", collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="md" size="sm" aria-label="Toggle navigation" />
            <Title order={2} size="h4">sliceportal</Title>
          </Group>
          <Group gap="sm" wrap="nowrap">
            {me && (
              <Text size="sm" c="dimmed" visibleFrom="xs" data-testid="whoami">
                {me.username} · {me.role}
              </Text>
            )}
            <Button
              variant="default"
              size="xs"
              onClick={async () => {
                await logout();
                navigate("/login");
              }}
            >
              Log out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Main navigation">
        {items.map((item) => (
          <NavLink
            key={item.to}
            component={Link}
            to={item.to}
            label={item.label}
            onClick={close}
            active={item.to === "/" ? location.pathname === "/" : location.pathname.startsWith(item.to)}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        <Suspense fallback={<Loader aria-label="Loading" />}>
          <Outlet />
        </Suspense>
      </AppShell.Main>
    </AppShell>
  );
}

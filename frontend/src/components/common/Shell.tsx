// The application frame: skip link, header, role-aware navigation (collapses to a burger below
// tablet width), and the page outlet inside an error boundary. NAV is the one list of pages and
// the roles that may open them; the router's guard reads it too.
import { Suspense, useLayoutEffect } from "react";
import { AppShell, Burger, Button, Group, Loader, NavLink, Text } from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import { Link, Outlet, useLocation, useNavigate } from "react-router";
import { useSession, type Role } from "../../auth/session";
import { titleFor } from "./documentTitle";
import { ErrorBoundary } from "./ErrorBoundary";
import classes from "./shell.module.css";

export interface NavItem {
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
  { to: "/users", label: "Users", roles: ["operator"] },
  { to: "/audit", label: "Audit log", roles: ["operator"] },
  { to: "/api-keys", label: "API keys", roles: ["integrator", "operator"] },
];

/** The navigation entry a path belongs to (longest prefix; "/" only matches itself). */
export function navItemOf(pathname: string): NavItem | undefined {
  return NAV.filter((n) =>
    n.to === "/" ? pathname === "/" : pathname === n.to || pathname.startsWith(`${n.to}/`),
  ).sort((a, b) => b.to.length - a.to.length)[0];
}

export function Shell() {
  const [opened, { toggle, close }] = useDisclosure();
  const { me, logout } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  const items = NAV.filter((n) => me && n.roles.includes(me.role));
  const current = navItemOf(location.pathname);

  // The section's name until the page names itself more precisely (PageTitle, a passive effect
  // of a child, runs after this layout effect).
  useLayoutEffect(() => {
    document.title = titleFor(current?.label ?? "");
  }, [current?.label, location.pathname]);

  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: "md", collapsed: { mobile: !opened } }}
      padding="md">
      <a
        href="#main"
        className={classes.skipLink}
        onClick={(e) => {
          e.preventDefault();
          document.getElementById("main")?.focus();
        }}>
        Skip to main content
      </a>
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger
              opened={opened}
              onClick={toggle}
              hiddenFrom="md"
              size="sm"
              aria-label="Toggle navigation"
              aria-expanded={opened}
            />
            <Text fw={700} size="lg" component={Link} to="/home" c="inherit" td="none">
              sliceportal
            </Text>
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
              }}>
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
            active={item === current}
            aria-current={item === current ? "page" : undefined}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main id="main" tabIndex={-1} className={classes.main}>
        <ErrorBoundary resetKey={location.pathname}>
          <Suspense fallback={<Loader role="status" aria-label="Loading" />}>
            <Outlet />
          </Suspense>
        </ErrorBoundary>
      </AppShell.Main>
    </AppShell>
  );
}

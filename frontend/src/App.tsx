// Routes. Everything but /login needs a session; each section is open to the roles NAV lists
// (Shell.tsx), so a role never reaches a page it cannot use; /home sends each role to its start
// page, or back to the deep link that led to the login page.
import { lazy, Suspense, useState, type ReactNode } from "react";
import { Anchor, Center, Loader, Stack, Text, Title } from "@mantine/core";
import { Link, Navigate, Outlet, Route, Routes, useLocation } from "react-router";
import { useSession, type Role } from "./auth/session";
import { useDocumentTitle } from "./components/common/documentTitle";
import { NotFound } from "./components/common/QueryView";
import { rememberReturnTo, takeReturnTo } from "./components/common/returnTo";
import { navItemOf, Shell } from "./components/common/Shell";
import { LoginPage } from "./components/Login/LoginPage";

// Pages load on first visit: the login page does not wait for the chart library.
const CataloguePage = lazy(() =>
  import("./components/SliceTypes/CataloguePage").then((m) => ({ default: m.CataloguePage })),
);
const TenantsPage = lazy(() => import("./components/Tenants/TenantsPage").then((m) => ({ default: m.TenantsPage })));
const SlicesPage = lazy(() => import("./components/Slices/SlicesPage").then((m) => ({ default: m.SlicesPage })));
const SliceWizard = lazy(() => import("./components/Slices/SliceWizard").then((m) => ({ default: m.SliceWizard })));
const SliceDetail = lazy(() => import("./components/Slices/SliceDetail").then((m) => ({ default: m.SliceDetail })));
const SubscribersPage = lazy(() =>
  import("./components/Subscribers/SubscribersPage").then((m) => ({ default: m.SubscribersPage })),
);
const ApiKeysPage = lazy(() => import("./components/ApiKeys/ApiKeysPage").then((m) => ({ default: m.ApiKeysPage })));
const DashboardPage = lazy(() => import("./components/Kpis/DashboardPage").then((m) => ({ default: m.DashboardPage })));
const OverviewPage = lazy(() =>
  import("./components/Overview/OverviewPage").then((m) => ({ default: m.OverviewPage })),
);
const BackendsPage = lazy(() =>
  import("./components/Backends/BackendsPage").then((m) => ({ default: m.BackendsPage })),
);
const BackendDetail = lazy(() =>
  import("./components/Backends/BackendDetail").then((m) => ({ default: m.BackendDetail })),
);
const UsersPage = lazy(() => import("./components/Users/UsersPage").then((m) => ({ default: m.UsersPage })));
const AuditPage = lazy(() => import("./components/Audit/AuditPage").then((m) => ({ default: m.AuditPage })));

const loading = (
  <Center mih="50vh">
    <Loader role="status" aria-label="Loading" />
  </Center>
);

function RequireSession({ children }: { children: ReactNode }) {
  const { loggedIn, loading: meLoading, me } = useSession();
  const location = useLocation();
  if (!loggedIn) {
    rememberReturnTo(location.pathname + location.search);
    return <Navigate to="/login" replace state={{ from: location.pathname }} />;
  }
  if (meLoading || !me) return loading;
  return <Suspense fallback={loading}>{children}</Suspense>;
}

// Pages narrower than their section (the slice list shows "New slice" to operators only).
const PAGE_ROLES: Record<string, Role[]> = { "/slices/new": ["operator"] };

/** Pages of a section only for the roles NAV allows; others get a plain explanation. */
function RequireRole({ children }: { children: ReactNode }) {
  const { me } = useSession();
  const { pathname } = useLocation();
  const item = navItemOf(pathname);
  const roles = PAGE_ROLES[pathname] ?? item?.roles;
  if (!item || !roles || !me || roles.includes(me.role)) return <>{children}</>;
  return <NotForRole section={item.label} />;
}

function NotForRole({ section }: { section: string }) {
  useDocumentTitle("Not available");
  return (
    <Stack align="center" mt="xl" role="alert">
      <Title order={1} size="h2">
        Not available
      </Title>
      <Text c="dimmed">{section} is not part of your role’s portal.</Text>
      <Anchor component={Link} to="/home">
        Go to your start page
      </Anchor>
    </Stack>
  );
}

function Home() {
  const { me } = useSession();
  const [target] = useState(() => takeReturnTo());
  const start = me?.role === "tenant" ? "/dashboard" : me?.role === "integrator" ? "/api-keys" : "/";
  return <Navigate to={target ?? start} replace />;
}

function OperatorHome() {
  const { me } = useSession();
  return me?.role === "operator" ? <OverviewPage /> : <Home />;
}

function Login() {
  useDocumentTitle("Log in");
  return <LoginPage />;
}

export function App() {
  return (
    <Routes>
      <Route path="/login" element={<Login />} />
      <Route
        element={
          <RequireSession>
            <Shell />
          </RequireSession>
        }>
        <Route index element={<OperatorHome />} />
        <Route path="home" element={<Home />} />
        <Route
          element={
            <RequireRole>
              <Suspense fallback={loading}>
                <Outlet />
              </Suspense>
            </RequireRole>
          }>
          <Route path="dashboard" element={<DashboardPage />} />
          <Route path="slice-types" element={<CataloguePage />} />
          <Route path="tenants" element={<TenantsPage />} />
          <Route path="slices" element={<SlicesPage />} />
          <Route path="slices/new" element={<SliceWizard />} />
          <Route path="slices/:sliceId" element={<SliceDetail />} />
          <Route path="subscribers" element={<SubscribersPage />} />
          <Route path="backends" element={<BackendsPage />} />
          <Route path="backends/:backendId" element={<BackendDetail />} />
          <Route path="users" element={<UsersPage />} />
          <Route path="audit" element={<AuditPage />} />
          <Route path="api-keys" element={<ApiKeysPage />} />
        </Route>
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}

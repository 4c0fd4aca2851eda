// Routes. Everything but /login needs a session; /home sends each role to its start page.
import { lazy, Suspense } from "react";
import { Center, Loader } from "@mantine/core";
import { Navigate, Route, Routes, useLocation } from "react-router";
import { useSession } from "./auth/session";
import { Shell } from "./components/common/Shell";
import { NotFound } from "./components/common/QueryView";
import { LoginPage } from "./components/Login/LoginPage";

// Pages load on first visit: the login page does not wait for the chart library.
const CataloguePage = lazy(() => import("./components/SliceTypes/CataloguePage").then((m) => ({ default: m.CataloguePage })));
const TenantsPage = lazy(() => import("./components/Tenants/TenantsPage").then((m) => ({ default: m.TenantsPage })));
const SlicesPage = lazy(() => import("./components/Slices/SlicesPage").then((m) => ({ default: m.SlicesPage })));
const SliceWizard = lazy(() => import("./components/Slices/SliceWizard").then((m) => ({ default: m.SliceWizard })));
const SliceDetail = lazy(() => import("./components/Slices/SliceDetail").then((m) => ({ default: m.SliceDetail })));
const SubscribersPage = lazy(() => import("./components/Subscribers/SubscribersPage").then((m) => ({ default: m.SubscribersPage })));
const ApiKeysPage = lazy(() => import("./components/ApiKeys/ApiKeysPage").then((m) => ({ default: m.ApiKeysPage })));
const DashboardPage = lazy(() => import("./components/Kpis/DashboardPage").then((m) => ({ default: m.DashboardPage })));
const OverviewPage = lazy(() => import("./components/Overview/OverviewPage").then((m) => ({ default: m.OverviewPage })));
const BackendsPage = lazy(() => import("./components/Backends/BackendsPage").then((m) => ({ default: m.BackendsPage })));
const BackendDetail = lazy(() => import("./components/Backends/BackendDetail").then((m) => ({ default: m.BackendDetail })));
const AuditPage = lazy(() => import("./components/Audit/AuditPage").then((m) => ({ default: m.AuditPage })));

function RequireSession({ children }: { children: React.ReactNode }) {
  const { loggedIn, loading, me } = useSession();
  const location = useLocation();
  if (!loggedIn) return <Navigate to="/login" replace state={{ from: location.pathname }} />;
  if (loading || !me) return <Center mih="50vh"><Loader aria-label="Loading" /></Center>;
  return <Suspense fallback={<Center mih="50vh"><Loader aria-label="Loading" /></Center>}>{children}</Suspense>;
}

function Home() {
  const { me } = useSession();
  const start = me?.role === "tenant" ? "/dashboard" : me?.role === "integrator" ? "/api-keys" : "/";
  return <Navigate to={start} replace />;
}

function OperatorHome() {
  const { me } = useSession();
  return me?.role === "operator" ? <OverviewPage /> : <Home />;
}

export function App() {
  return (
    <Routes>
      <Route path="/login" element={<LoginPage />} />
      <Route element={<RequireSession><Shell /></RequireSession>}>
        <Route index element={<OperatorHome />} />
        <Route path="home" element={<Home />} />
        <Route path="dashboard" element={<DashboardPage />} />
        <Route path="slice-types" element={<CataloguePage />} />
        <Route path="tenants" element={<TenantsPage />} />
        <Route path="slices" element={<SlicesPage />} />
        <Route path="slices/new" element={<SliceWizard />} />
        <Route path="slices/:sliceId" element={<SliceDetail />} />
        <Route path="subscribers" element={<SubscribersPage />} />
        <Route path="backends" element={<BackendsPage />} />
        <Route path="backends/:backendId" element={<BackendDetail />} />
        <Route path="audit" element={<AuditPage />} />
        <Route path="api-keys" element={<ApiKeysPage />} />
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}

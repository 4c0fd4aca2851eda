// Routes. Everything but /login needs a session; /home sends each role to its start page.
import { Center, Loader } from "@mantine/core";
import { Navigate, Route, Routes, useLocation } from "react-router";
import { useSession } from "./auth/session";
import { Shell } from "./components/common/Shell";
import { NotFound } from "./components/common/QueryView";
import { LoginPage } from "./components/Login/LoginPage";
import { CataloguePage } from "./components/SliceTypes/CataloguePage";
import { TenantsPage } from "./components/Tenants/TenantsPage";
import { SlicesPage } from "./components/Slices/SlicesPage";
import { SliceWizard } from "./components/Slices/SliceWizard";
import { SliceDetail } from "./components/Slices/SliceDetail";
import { SubscribersPage } from "./components/Subscribers/SubscribersPage";
import { ApiKeysPage } from "./components/ApiKeys/ApiKeysPage";
import { DashboardPage } from "./components/Kpis/DashboardPage";
import { OverviewPage } from "./components/Overview/OverviewPage";
import { BackendsPage } from "./components/Backends/BackendsPage";
import { BackendDetail } from "./components/Backends/BackendDetail";
import { AuditPage } from "./components/Audit/AuditPage";

function RequireSession({ children }: { children: React.ReactNode }) {
  const { loggedIn, loading, me } = useSession();
  const location = useLocation();
  if (!loggedIn) return <Navigate to="/login" replace state={{ from: location.pathname }} />;
  if (loading || !me) return <Center mih="50vh"><Loader aria-label="Loading" /></Center>;
  return <>{children}</>;
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

"""The domain model (docs/architecture.md). Importing this package registers every table."""

from sliceportal.models.audit import AuditLog
from sliceportal.models.auth import (
    ApiKey,
    AuthSession,
    LoginAttempt,
    LoginThrottle,
    RefreshToken,
    Role,
    Scope,
    User,
)
from sliceportal.models.base import Base
from sliceportal.models.catalogue import SliceType
from sliceportal.models.controller import ControllerHeartbeat, TestbedCommand, TestbedReport
from sliceportal.models.deployments import Deployment, DeploymentKind, DeploymentStatus, RuleSet
from sliceportal.models.footprint import BackendFootprint, RuleSetFootprint, SliceFootprintGen
from sliceportal.models.import_jobs import ImportJob, ImportJobStatus
from sliceportal.models.intents import Intent
from sliceportal.models.kpi import KpiSample, SlaViolation
from sliceportal.models.slicing import Backend, PathMode, ServiceClass, Slice, SliceState
from sliceportal.models.subscribers import Subscriber
from sliceportal.models.tenancy import Tenant

__all__ = [
    "ApiKey",
    "AuditLog",
    "AuthSession",
    "Backend",
    "BackendFootprint",
    "Base",
    "ControllerHeartbeat",
    "Deployment",
    "DeploymentKind",
    "DeploymentStatus",
    "ImportJob",
    "ImportJobStatus",
    "Intent",
    "KpiSample",
    "LoginAttempt",
    "LoginThrottle",
    "PathMode",
    "RefreshToken",
    "Role",
    "RuleSet",
    "RuleSetFootprint",
    "Scope",
    "ServiceClass",
    "SlaViolation",
    "Slice",
    "SliceFootprintGen",
    "SliceState",
    "SliceType",
    "Subscriber",
    "Tenant",
    "TestbedCommand",
    "TestbedReport",
    "User",
]

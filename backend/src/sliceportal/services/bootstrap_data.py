"""First operator account, the demo tenants, slices and subscribers of the run command, and
(only when asked) demo tenant accounts with random passwords."""

from __future__ import annotations

import ipaddress
import secrets

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.core.security import hash_password
from sliceportal.models import Role, ServiceClass, Slice, SliceType, Subscriber, Tenant, User

# seed 000 Table 2: inner UDP destination ports → lanes of a Flexible Slice (0/2/4/6). The
# paper's ports are the even ones (5000, 5002 ...); the aligned ranges 5000-5007 ... hold them
# and are one ternary entry each.
TABLE_2_SERVICES = [
    ("best-effort", 0, 5000, 5007),
    ("streaming", 2, 5008, 5015),
    ("interactive", 4, 5016, 5023),
    ("critical", 6, 5024, 5031),
]


def ensure_operator(session: Session, username: str = "admin") -> str | None:
    """Create the first operator if there is no user at all; returns its password once."""
    if session.scalar(select(func.count()).select_from(User)):
        return None
    password = secrets.token_urlsafe(12)
    session.add(
        User(username=username, password_hash=hash_password(password), role=Role.OPERATOR, full_name="First operator")
    )
    session.commit()
    return password


def seed_demo(session: Session, users_per_slice: int = 32) -> bool:
    """Demo tenants / slices / subscribers, once, on an empty database."""
    if session.scalar(select(func.count()).select_from(Tenant)):
        return False
    types = {t.name: t for t in session.scalars(select(SliceType))}
    # SLAs at the emulated testbed's scale (docs/testbed.md "Rates"): it offers a few Mbit/s
    # per slice, and its software data planes (a Python P4 target, a cycle-accurate RTL model)
    # queue for 100-350 ms at p99 where the kernel's XDP path takes well under 1 ms. Rate
    # limits the traffic can approach, and delay bounds the eMBB / IoT slices meet on every
    # plane; the URLLC slice keeps a 5 ms bound, which only XDP can hold (its SLA status
    # on the software planes says so). Admission control refuses these SLAs on the software
    # planes' links (~9.8 / ~4.9 Mbit/s): rate limits below XDP's offered load would make XDP
    # drop the demo's traffic, so the testbed admits them there with a recorded reason
    # (testbed/live.py DEMO_ADMISSION_OVERRIDE; docs/rules.md "The testbed's capacities").
    plan = [
        (
            "mvno-red",
            1001,
            100,
            "10.45.0.0/16",
            [("red-embb", "Flexible Slice", 20.0, 500.0), ("red-iot", "Best Effort", 5.0, 1000.0)],
        ),
        ("mvno-blue", 1002, 200, "10.46.0.0/16", [("blue-urllc", "Reliable Flexible Slice", 10.0, 5.0)]),
    ]
    for t_index, (name, vni, vlan, pool, slices) in enumerate(plan):
        tenant = Tenant(
            name=name,
            vni=vni,
            vlan=vlan,
            ue_pool=ipaddress.IPv4Network(pool),
            contact=f"noc@{name}.example",
            description="demo tenant",
        )
        session.add(tenant)
        session.flush()
        for s_index, (sname, tname, rate, delay) in enumerate(slices):
            stype = types[tname]
            services = [
                ServiceClass(name=svc, lane=stype.lanes[i % len(stype.lanes)], dst_ports=[[lo, hi]])
                for i, (svc, _, lo, hi) in enumerate(TABLE_2_SERVICES[: len(stype.lanes)])
            ]
            sl = Slice(
                tenant_id=tenant.id,
                slice_type_id=stype.id,
                name=sname,
                rate_limit_mbps=rate,
                max_delay_ms=delay,
                ecn_delay_ms=delay / 4,
                max_loss_pct=1.0,
                max_jitter_ms=delay / 2,
                services=services,
                description="demo slice",
            )
            session.add(sl)
            session.flush()
            net = ipaddress.IPv4Network(pool)
            for u in range(users_per_slice):
                ip = net.network_address + (s_index << 8) + u  # a slice's users form one /27
                imsi = f"00101{t_index:02d}{s_index:02d}{u:06d}"
                session.add(
                    Subscriber(
                        tenant_id=tenant.id,
                        imsi=imsi,
                        ue_ip=ip,
                        teids=[(vni << 12) + (s_index << 8) + u + 1],
                        slices=[sl],
                    )
                )
    session.commit()
    return True


def create_demo_accounts(session: Session) -> list[tuple[str, str]]:
    """A tenant account ``<tenant>-viewer`` for every tenant that has none yet, each with a
    random password, returned once (user, password). Never a published password: anyone
    could log in with one on every install."""
    created: list[tuple[str, str]] = []
    for tenant in session.scalars(select(Tenant).order_by(Tenant.id)):
        username = f"{tenant.name}-viewer"
        if session.scalar(select(func.count()).select_from(User).where(func.lower(User.username) == username.lower())):
            continue
        password = secrets.token_urlsafe(12)
        session.add(
            User(
                username=username,
                password_hash=hash_password(password),
                role=Role.TENANT,
                tenant_id=tenant.id,
                full_name=f"{tenant.name} NOC",
            )
        )
        created.append((username, password))
    session.commit()
    return created

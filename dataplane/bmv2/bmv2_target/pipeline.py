"""slicing.p4's ingress and egress controls, executed on raw packets.

Every table, action, counter, register and meter is found by its name in the P4Info the
controller pushed, so control-plane ids are whatever that P4Info says (p4c's or ours).
The code follows include/*.p4 line by line; keep the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from .errors import P4RTError
from .p4info_index import P4InfoIndex
from .packet import Key, Parsed, flow_key, ipv4_checksum, parse
from .state import ExternState
from .tables import Table, TableStore

ING, EGR = "SlicingIngress", "SlicingEgress"
M32, M64 = (1 << 32) - 1, (1 << 64) - 1
ECN_CE = 3


@dataclass(slots=True)
class InFlight:
    """A packet between ingress and egress (v1model: user metadata survives the TM)."""

    data: bytes
    parsed: Parsed
    egress_port: int
    priority: int
    slice_id: int
    tenant_vid: int
    ecn_ip: int  # offset of the IPv4 header to mark CE, -1 = none


class Pipeline:
    def __init__(self, index: P4InfoIndex, tables: TableStore, ext: ExternState) -> None:
        self.tables, self.ext = tables, ext
        try:
            t = index.id
            self.port_tenant = tables.tables[t(f"{ING}.tenant.port_tenant")]
            self.vlan_tenant = tables.tables[t(f"{ING}.tenant.vlan_tenant")]
            self.classifier = tables.tables[t(f"{ING}.classifier.classifier")]
            self.slice_qos = tables.tables[t(f"{ING}.vqueue.slice_qos")]
            self.tenant_forward = tables.tables[t(f"{ING}.fwd.tenant_forward")]
            self.egress_vlan = tables.tables[t(f"{EGR}.vlan_tag.egress_vlan")]
            self.a = {
                name: t(f"{ING}.{name}")
                for name in (
                    "tenant.set_access_tenant",
                    "tenant.set_trunk",
                    "tenant.set_vlan_tenant",
                    "classifier.set_slice",
                    "classifier.miss_algorithm1",
                    "classifier.miss_fixed",
                    "vqueue.queue_manage",
                    "vqueue.meter_police",
                    "fwd.forward",
                )
            }
            self.a["push_tenant_vlan"] = t(f"{EGR}.vlan_tag.push_tenant_vlan")
            self.a["pop_vlan"] = t(f"{EGR}.vlan_tag.pop_vlan")
            c = ext.counters
            self.tenant_drops = c[t(f"{ING}.tenant.tenant_drops")]
            self.slice_rx = c[t(f"{ING}.classifier.slice_rx")]
            self.malformed = c[t(f"{ING}.classifier.malformed")]
            self.slice_drops = c[t(f"{ING}.vqueue.slice_drops")]
            self.slice_ecn_marks = c[t(f"{ING}.vqueue.slice_ecn_marks")]
            self.lane_tx = c[t(f"{EGR}.vlan_tag.lane_tx")]
            self.slice_tx = c[t(f"{EGR}.vlan_tag.slice_tx")]
            r = ext.registers
            self.slice_ts = r[t(f"{ING}.vqueue.slice_ts")]
            self.slice_delay = r[t(f"{ING}.vqueue.slice_delay")]
            self.slice_delay_max = r[t(f"{ING}.vqueue.slice_delay_max")]
            self.slice_meter = ext.meters[t(f"{ING}.vqueue.slice_meter")]
        except KeyError as e:
            raise P4RTError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"this target executes slicing.p4 only; the P4Info lacks {e}",
            ) from None
        if self.classifier.info.preamble.id not in tables.initial_defaults:
            # p4c writes `default_action = miss_fixed(0)` as initial_default_action.
            raise P4RTError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "the P4Info gives the classifier no initial_default_action: push p4c's (make compile)",
            )

    # ---- table helpers ----------------------------------------------------------------

    @staticmethod
    def _exact(table: Table, *key: int) -> tuple[int, tuple[int, ...]] | None:
        full = tuple((k, (1 << f.bitwidth) - 1) for k, f in zip(key, table.fields, strict=True))
        e = table.entries.get((full, 0))
        if e is None:
            return None
        e.packets += 1
        return e.action_id, e.params

    def _classify(self, tenant_id: int, k: Key, length: int) -> tuple[int, tuple[int, ...]]:
        values = (
            tenant_id,
            k.has_vni,
            k.vni,
            k.has_teid,
            k.teid,
            k.src_ip,
            k.dst_ip,
            k.dst_port,
            k.dscp,
            k.has_vlan,
            k.vlan,
        )
        for e in self.classifier.ordered:
            for v, (ev, em) in zip(values, e.key, strict=True):
                if v & em != ev:
                    break
            else:
                e.packets += 1  # classifier_hits, the direct counter
                e.bytes += length
                return e.action_id, e.params
        return self.classifier.default_action_id, self.classifier.default_params

    # ---- ingress ------------------------------------------------------------------------

    def ingress(self, data: bytes, port: int, now_us: int) -> InFlight | None:
        """SlicingIngress; None when the packet is dropped (mark_to_drop)."""
        p = parse(data)
        length = len(data)
        drop = False
        tenant_id = tenant_vid = 0
        hit = self._exact(self.port_tenant, port)
        if hit is None:
            drop = True
            self.tenant_drops[0][0] += 1
        elif hit[0] == self.a["tenant.set_access_tenant"]:
            tenant_id, tenant_vid = hit[1]
        else:  # set_trunk
            vlan_valid = 1 if p.vlan >= 0 else 0
            vid = (int.from_bytes(data[p.vlan : p.vlan + 2], "big") & 0xFFF) if vlan_valid else 0
            hit = self._exact(self.vlan_tenant, port, vlan_valid, vid)
            if hit is None:
                drop = True
                self.tenant_drops[1][0] += 1
            else:
                tenant_id, tenant_vid = hit[1][0], vid
        slice_id = priority = 0
        ecn_ip = -1
        if not drop:
            k = flow_key(p, data)
            if p.error:
                self.malformed[0][0] += 1
            if k.has_ip:
                action, params = self._classify(tenant_id, k, length)
                if action == self.a["classifier.set_slice"]:
                    slice_id, priority = params
                elif action == self.a["classifier.miss_algorithm1"]:
                    priority = (k.dscp & 0b111) >> params[0]
                elif action == self.a["classifier.miss_fixed"]:
                    priority = params[0]
            cell = self.slice_rx[slice_id]
            cell[0] += 1
            cell[1] += length
            drop, mark = self._vqueue(slice_id, length, now_us)
            if mark:
                ecn_ip = self._mark_target(p, data, slice_id)
        if not drop:
            hit = self._exact(self.tenant_forward, tenant_id, port)
            if hit is None:
                drop = True
        if drop or hit is None:
            return None
        return InFlight(data, p, hit[1][0], priority, slice_id, tenant_vid, ecn_ip)

    def _vqueue(self, slice_id: int, length: int, now_us: int) -> tuple[bool, bool]:
        """VirtualQueue.apply: (drop, ecn_mark)."""
        hit = self._exact(self.slice_qos, slice_id)
        if hit is None:
            return False, False
        action, params = hit
        if action == self.a["vqueue.meter_police"]:
            if self.slice_meter[slice_id].execute(length, now_us) == 2:
                self.slice_drops[slice_id][0] += 1
                return True, False
            return False, False
        byte_time, c_delay, m_delay = params
        now = (now_us * 1000) & M64
        prev = self.slice_ts[slice_id]
        self.slice_ts[slice_id] = now
        delta = now - prev if prev != 0 and prev <= now else 0
        delay = self.slice_delay[slice_id]
        delay = 0 if delta > delay else delay - delta
        t_delay = ((length * byte_time) & M64) >> 10
        drop = False
        if delay + t_delay > c_delay:
            drop = True
            self.slice_drops[slice_id][0] += 1
        else:
            delay += t_delay
        self.slice_delay[slice_id] = delay & M32
        if delay & M32 > self.slice_delay_max[slice_id]:
            self.slice_delay_max[slice_id] = delay & M32
        return drop, (not drop and delay > m_delay)

    def _mark_target(self, p: Parsed, data: bytes, slice_id: int) -> int:
        ip = p.ue_ipv4 if p.ue_ipv4 >= 0 else p.inner_ipv4 if p.inner_ipv4 >= 0 else p.ipv4
        if ip < 0 or data[ip + 1] & 0b11 == 0 or data[ip] & 0x0F != 5:
            return -1
        self.slice_ecn_marks[slice_id][0] += 1
        return ip

    # ---- egress + deparser + checksums ---------------------------------------------------

    def egress(self, f: InFlight) -> bytes:
        out = bytearray(f.data)
        p = f.parsed
        if f.ecn_ip >= 0:
            out[f.ecn_ip + 1] |= ECN_CE
        # SlicingComputeChecksum: every option-less IPv4 header the parser extracted.
        for ip in (p.ipv4, p.inner_ipv4, p.ue_ipv4):
            if ip >= 0 and out[ip] & 0x0F == 5:
                out[ip + 10 : ip + 12] = ipv4_checksum(out[ip : ip + 20]).to_bytes(2, "big")
        hit = self._exact(self.egress_vlan, f.egress_port)
        # a frame without a complete Ethernet header is never tagged (docs/packets.md)
        if hit is not None and hit[0] == self.a["push_tenant_vlan"] and len(out) >= 14:
            if p.vlan >= 0:
                tci = (int.from_bytes(out[14:16], "big") & 0xF000) | f.tenant_vid
                out[14:16] = tci.to_bytes(2, "big")
            else:
                out[12:12] = b"\x81\x00" + f.tenant_vid.to_bytes(2, "big")
        elif hit is not None and hit[0] == self.a["pop_vlan"] and p.vlan >= 0:
            del out[12:16]
        lane = self.lane_tx[f.priority]
        lane[0] += 1
        lane[1] += len(f.data)
        cell = self.slice_tx[f.slice_id]
        cell[0] += 1
        cell[1] += len(f.data)
        return bytes(out)

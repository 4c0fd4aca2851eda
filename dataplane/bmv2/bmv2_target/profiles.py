"""Action profiles and selectors over P4Runtime, as simple_switch_grpc's P4Runtime server
(PI f96af95e, proto/frontend/src/action_prof_mgr.cpp, "manual" mode) drives BMv2's.

The members, groups and their BMv2 handles live in the engine (engine/src/profiles.rs);
this keeps what PI keeps: P4Runtime member / group ids and the handles behind them. PI maps
a member of weight w in a group to w BMv2 members with the same action (the member's own
handle, then copies made when a group first needs them and deleted when no group needs
them any more), because a BMv2 group holds a member handle once. Selection is BMv2's:
hash % group size over the group's handles in order, so the copies a member has, and the
handles they got, decide which packets it takes. Everything here happens in PI's order
(members of an update by id, removals before additions, copies deleted from the last),
so that the engine hands out the same lowest-free handles as BMv2.

Error codes are PI's: unknown profile INVALID_ARGUMENT; an action not of the profile or
bad parameters INVALID_ARGUMENT; a duplicate id ALREADY_EXISTS; an unknown id NOT_FOUND; a
weight below 1 or a member twice in a group INVALID_ARGUMENT; weights summing past the
group's max_size RESOURCE_EXHAUSTED; deleting a member or group still in use UNKNOWN (the
target refuses: BMv2's MBR_STILL_USED / GRP_STILL_USED).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .engine import Engine
from .errors import P4RTError, invalid, not_found
from .p4info_index import P4InfoIndex
from .values import action_params

Update = p4runtime_pb2.Update
MEMBER, GROUP = 0, 1  # the kinds of an indirect entry's reference (engine/src/profiles.rs)


def target_error(message: str) -> P4RTError:
    """What PI answers when BMv2 refuses an operation."""
    return P4RTError(grpc.StatusCode.UNKNOWN, message)


@dataclass
class Member:
    action_id: int
    params: tuple[int, ...]
    handles: list[int]  # BMv2 member handles: [0] the member's own, then weighted copies
    weight_counts: dict[int, int] = field(default_factory=lambda: {1: 1})  # weight -> uses


@dataclass
class Group:
    handle: int
    max_size: int
    weights: dict[int, int] = field(default_factory=dict)  # member id -> weight


@dataclass
class Profile:
    info: p4info_pb2.ActionProfile
    engine_profile: int
    engine_actions: dict[int, int]  # P4Info action id -> engine action
    members: dict[int, Member] = field(default_factory=dict)
    groups: dict[int, Group] = field(default_factory=dict)
    member_of_handle: dict[int, int] = field(default_factory=dict)  # BMv2 handle -> member id
    group_of_handle: dict[int, int] = field(default_factory=dict)


class ProfileStore:
    def __init__(self, index: P4InfoIndex, engine: Engine, table_actions: dict[int, dict[int, int]]) -> None:
        """``table_actions``: per P4Info table id, its actions' engine indices."""
        self.index = index
        self.engine = engine
        self.profiles: dict[int, Profile] = {}
        for ap in index.info.action_profiles:
            p = engine.profile_index(ap.preamble.name)
            if p is None:
                raise invalid(f"the P4Info's action profile {ap.preamble.name} is not in the device config")
            tables = [t for t in ap.table_ids if t in table_actions]
            actions = table_actions[tables[0]] if tables else {}
            self.profiles[ap.preamble.id] = Profile(ap, p, actions)

    def profile(self, profile_id: int) -> Profile:
        p = self.profiles.get(profile_id)
        if p is None:
            raise invalid(f"not a valid action profile id: {profile_id}")
        return p

    # ---- members ----------------------------------------------------------------------

    def _action(self, p: Profile, action: p4runtime_pb2.Action) -> tuple[int, tuple[int, ...]]:
        a = self.index.actions.get(action.action_id)
        if a is None:
            raise invalid(f"unknown action id {action.action_id}")
        if action.action_id not in p.engine_actions:
            raise invalid(f"action {a.preamble.name} is not an action of {p.info.preamble.name}")
        return action.action_id, action_params(a, action)

    def write_member(self, utype: int, m: p4runtime_pb2.ActionProfileMember) -> None:
        p = self.profile(m.action_profile_id)
        if utype == Update.DELETE:
            self._member_delete(p, m.member_id)
            return
        action_id, params = self._action(p, m.action)
        engine_action = p.engine_actions[action_id]
        if utype == Update.INSERT:
            if m.member_id in p.members:
                raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"duplicate member id: {m.member_id}")
            h = self.engine.member_add(p.engine_profile, engine_action, list(params))
            p.members[m.member_id] = Member(action_id, params, [h])
            p.member_of_handle[h] = m.member_id
        elif utype == Update.MODIFY:
            st = p.members.get(m.member_id)
            if st is None:
                raise not_found(f"member id does not exist: {m.member_id}")
            for h in st.handles:  # the copies too: they are the same member
                self.engine.member_modify(p.engine_profile, h, engine_action, list(params))
            st.action_id, st.params = action_id, params
        else:
            raise invalid("update type is not set")

    def _member_delete(self, p: Profile, member_id: int) -> None:
        st = p.members.get(member_id)
        if st is None:
            raise not_found(f"member id does not exist: {member_id}")
        for h in st.handles:
            try:
                self.engine.member_delete(p.engine_profile, h)
            except (ValueError, KeyError) as e:  # in a group, or named by an entry
                raise target_error(f"error when deleting member on target: {e}") from None
            p.member_of_handle.pop(h, None)
        del p.members[member_id]

    # ---- groups -----------------------------------------------------------------------

    def write_group(self, utype: int, g: p4runtime_pb2.ActionProfileGroup) -> None:
        p = self.profile(g.action_profile_id)
        if utype == Update.INSERT:
            if g.max_size < 0:
                raise invalid("group max_size cannot be less than 0")
            limit = p.info.max_group_size
            if limit > 0 and g.max_size > limit:
                raise invalid("group max_size cannot exceed static max_group_size (from P4Info)")
            if g.group_id in p.groups:
                raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"duplicate group id: {g.group_id}")
            h = self.engine.group_create(p.engine_profile)  # also without a selector, as BMv2
            p.groups[g.group_id] = Group(h, g.max_size)
            p.group_of_handle[h] = g.group_id
            # PI keeps the (empty) group when its members are refused
            self._update_members(p, g)
        elif utype == Update.MODIFY:
            grp = p.groups.get(g.group_id)
            if grp is None:
                raise not_found(f"group id does not exist: {g.group_id}")
            if g.max_size != 0 and g.max_size != grp.max_size:
                raise invalid("cannot change group max_size after group creation")
            self._update_members(p, g)
        elif utype == Update.DELETE:
            self._group_delete(p, g.group_id)
        else:
            raise invalid("update type is not set")

    def _update_members(self, p: Profile, g: p4runtime_pb2.ActionProfileGroup) -> None:
        """PI's group_update_members (INDIVIDUAL_ADDS_AND_REMOVES, as for bmv2)."""
        if any(m.weight <= 0 for m in g.members):
            raise invalid("member weight must be a positive integer value")
        grp = p.groups[g.group_id]
        limit = grp.max_size or p.info.max_group_size
        if limit > 0 and sum(m.weight for m in g.members) > limit:
            raise P4RTError(grpc.StatusCode.RESOURCE_EXHAUSTED, "sum of member weights exceeds maximum group size")
        new: dict[int, int] = {}
        for m in g.members:
            if m.member_id not in p.members:
                raise not_found(f"member id does not exist: {m.member_id}")
            if m.member_id in new:
                raise invalid(f"duplicate member id {m.member_id} for group {g.group_id}, use weights instead")
            new[m.member_id] = m.weight
        # by member id (PI's std::map), each member from its current weight to its new one
        update = [(mid, grp.weights.get(mid, 0), new.get(mid, 0)) for mid in sorted({*grp.weights, *new})]
        for mid, current, wanted in update:
            st = p.members[mid]
            for _ in range(len(st.handles), wanted):  # copies the group needs first
                h = self.engine.member_add(p.engine_profile, p.engine_actions[st.action_id], list(st.params))
                st.handles.append(h)
                p.member_of_handle[h] = mid
            if current > 0:
                st.weight_counts[current] -= 1
            for i in range(current - 1, wanted - 1, -1):
                self.engine.group_member(p.engine_profile, grp.handle, st.handles[i], False)
            for i in range(current, wanted):
                self.engine.group_member(p.engine_profile, grp.handle, st.handles[i], True)
            if wanted > 0:
                st.weight_counts[wanted] = st.weight_counts.get(wanted, 0) + 1
        grp.weights = new
        for mid, _, _ in update:
            self._purge(p, p.members[mid])

    def _purge(self, p: Profile, st: Member) -> None:
        """PI's purge_unused_weighted_members: copies beyond the largest weight in use go,
        the last one first."""
        used = max(w for w, n in st.weight_counts.items() if n)
        st.weight_counts = {w: n for w, n in st.weight_counts.items() if w <= used}
        while len(st.handles) > used:
            h = st.handles.pop()
            self.engine.member_delete(p.engine_profile, h)
            p.member_of_handle.pop(h, None)

    def _group_delete(self, p: Profile, group_id: int) -> None:
        grp = p.groups.get(group_id)
        if grp is None:
            raise not_found(f"group id does not exist: {group_id}")
        try:
            self.engine.group_delete(p.engine_profile, grp.handle)
        except (ValueError, KeyError) as e:  # an entry names it
            raise target_error(f"error when deleting group on target: {e}") from None
        for mid, w in sorted(grp.weights.items()):
            st = p.members[mid]
            st.weight_counts[w] -= 1
            self._purge(p, st)
        del p.groups[group_id]
        p.group_of_handle.pop(grp.handle, None)

    # ---- table entries ----------------------------------------------------------------

    def resolve(self, profile_id: int, action: p4runtime_pb2.TableAction) -> tuple[int, int, int]:
        """An indirect entry's reference: (kind, BMv2 handle, P4Runtime id)."""
        p = self.profile(profile_id)
        which = action.WhichOneof("type")
        if which == "action_profile_member_id":
            st = p.members.get(action.action_profile_member_id)
            if st is not None:
                return MEMBER, st.handles[0], action.action_profile_member_id
        elif which == "action_profile_group_id":
            grp = p.groups.get(action.action_profile_group_id)
            if grp is not None:
                return GROUP, grp.handle, action.action_profile_group_id
        elif which == "action_profile_action_set":
            if p.members or p.groups:  # PI's ActionProfMgr: one mode per profile while it holds anything
                raise invalid("invalid attempt to mix action selector programming modes")
            raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, "one-shot action selector programming is not supported")
        raise invalid("invalid member / group id")

    # ---- reads ------------------------------------------------------------------------

    def _selected(self, profile_id: int) -> list[Profile]:
        if profile_id == 0:
            return list(self.profiles.values())
        return [self.profile(profile_id)]

    def read_members(self, m: p4runtime_pb2.ActionProfileMember) -> Iterator[p4runtime_pb2.Entity]:
        """Every BMv2 member, in handle order, as PI lists them: a weighted copy reads as
        its member once more; with a member id, that member once (an unknown one: none)."""
        for p in self._selected(m.action_profile_id):
            action_of = {e: a for a, e in p.engine_actions.items()}
            one = p.members.get(m.member_id) if m.member_id else None
            for h, engine_action, params in self.engine.members(p.engine_profile):
                if m.member_id and (one is None or h != one.handles[0]):
                    continue
                out = p4runtime_pb2.Entity()
                mem = out.action_profile_member
                mem.action_profile_id, mem.member_id = p.info.preamble.id, p.member_of_handle[h]
                action_id = action_of[engine_action]
                mem.action.action_id = action_id
                for spec, v in zip(self.index.actions[action_id].params, params, strict=True):
                    mem.action.params.add(param_id=spec.id, value=v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big"))
                yield out

    def read_groups(self, g: p4runtime_pb2.ActionProfileGroup) -> Iterator[p4runtime_pb2.Entity]:
        for p in self._selected(g.action_profile_id):
            for h, handles in self.engine.groups(p.engine_profile):
                if g.group_id and p.group_of_handle.get(h) != g.group_id:
                    continue
                out = p4runtime_pb2.Entity()
                grp = out.action_profile_group
                gid = p.group_of_handle[h]
                grp.action_profile_id, grp.group_id, grp.max_size = p.info.preamble.id, gid, p.groups[gid].max_size
                weights: dict[int, int] = {}
                for mh in handles:
                    mid = p.member_of_handle[mh]
                    weights[mid] = weights.get(mid, 0) + 1
                for mid, w in sorted(weights.items()):
                    grp.members.add(member_id=mid, weight=w)
                yield out

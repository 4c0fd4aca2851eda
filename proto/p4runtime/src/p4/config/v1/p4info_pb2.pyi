from google.protobuf import any_pb2 as _any_pb2
from p4.config.v1 import p4types_pb2 as _p4types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class P4Info(_message.Message):
    __slots__ = ("pkg_info", "tables", "actions", "action_profiles", "counters", "direct_counters", "meters", "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests", "externs", "type_info")
    PKG_INFO_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    ACTION_PROFILES_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    DIRECT_COUNTERS_FIELD_NUMBER: _ClassVar[int]
    METERS_FIELD_NUMBER: _ClassVar[int]
    DIRECT_METERS_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_PACKET_METADATA_FIELD_NUMBER: _ClassVar[int]
    VALUE_SETS_FIELD_NUMBER: _ClassVar[int]
    REGISTERS_FIELD_NUMBER: _ClassVar[int]
    DIGESTS_FIELD_NUMBER: _ClassVar[int]
    EXTERNS_FIELD_NUMBER: _ClassVar[int]
    TYPE_INFO_FIELD_NUMBER: _ClassVar[int]
    pkg_info: PkgInfo
    tables: _containers.RepeatedCompositeFieldContainer[Table]
    actions: _containers.RepeatedCompositeFieldContainer[Action]
    action_profiles: _containers.RepeatedCompositeFieldContainer[ActionProfile]
    counters: _containers.RepeatedCompositeFieldContainer[Counter]
    direct_counters: _containers.RepeatedCompositeFieldContainer[DirectCounter]
    meters: _containers.RepeatedCompositeFieldContainer[Meter]
    direct_meters: _containers.RepeatedCompositeFieldContainer[DirectMeter]
    controller_packet_metadata: _containers.RepeatedCompositeFieldContainer[ControllerPacketMetadata]
    value_sets: _containers.RepeatedCompositeFieldContainer[ValueSet]
    registers: _containers.RepeatedCompositeFieldContainer[Register]
    digests: _containers.RepeatedCompositeFieldContainer[Digest]
    externs: _containers.RepeatedCompositeFieldContainer[Extern]
    type_info: _p4types_pb2.P4TypeInfo
    def __init__(self, pkg_info: _Optional[_Union[PkgInfo, _Mapping]] = ..., tables: _Optional[_Iterable[_Union[Table, _Mapping]]] = ..., actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ..., action_profiles: _Optional[_Iterable[_Union[ActionProfile, _Mapping]]] = ..., counters: _Optional[_Iterable[_Union[Counter, _Mapping]]] = ..., direct_counters: _Optional[_Iterable[_Union[DirectCounter, _Mapping]]] = ..., meters: _Optional[_Iterable[_Union[Meter, _Mapping]]] = ..., direct_meters: _Optional[_Iterable[_Union[DirectMeter, _Mapping]]] = ..., controller_packet_metadata: _Optional[_Iterable[_Union[ControllerPacketMetadata, _Mapping]]] = ..., value_sets: _Optional[_Iterable[_Union[ValueSet, _Mapping]]] = ..., registers: _Optional[_Iterable[_Union[Register, _Mapping]]] = ..., digests: _Optional[_Iterable[_Union[Digest, _Mapping]]] = ..., externs: _Optional[_Iterable[_Union[Extern, _Mapping]]] = ..., type_info: _Optional[_Union[_p4types_pb2.P4TypeInfo, _Mapping]] = ...) -> None: ...

class Documentation(_message.Message):
    __slots__ = ("brief", "description")
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    brief: str
    description: str
    def __init__(self, brief: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class PlatformProperties(_message.Message):
    __slots__ = ("multicast_group_table_size", "multicast_group_table_total_replicas", "multicast_group_table_max_replicas_per_entry")
    MULTICAST_GROUP_TABLE_SIZE_FIELD_NUMBER: _ClassVar[int]
    MULTICAST_GROUP_TABLE_TOTAL_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    MULTICAST_GROUP_TABLE_MAX_REPLICAS_PER_ENTRY_FIELD_NUMBER: _ClassVar[int]
    multicast_group_table_size: int
    multicast_group_table_total_replicas: int
    multicast_group_table_max_replicas_per_entry: int
    def __init__(self, multicast_group_table_size: _Optional[int] = ..., multicast_group_table_total_replicas: _Optional[int] = ..., multicast_group_table_max_replicas_per_entry: _Optional[int] = ...) -> None: ...

class PkgInfo(_message.Message):
    __slots__ = ("name", "version", "doc", "annotations", "annotation_locations", "arch", "organization", "contact", "url", "structured_annotations", "platform_properties")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    ORGANIZATION_FIELD_NUMBER: _ClassVar[int]
    CONTACT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    doc: Documentation
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.SourceLocation]
    arch: str
    organization: str
    contact: str
    url: str
    structured_annotations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.StructuredAnnotation]
    platform_properties: PlatformProperties
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., doc: _Optional[_Union[Documentation, _Mapping]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[_p4types_pb2.SourceLocation, _Mapping]]] = ..., arch: _Optional[str] = ..., organization: _Optional[str] = ..., contact: _Optional[str] = ..., url: _Optional[str] = ..., structured_annotations: _Optional[_Iterable[_Union[_p4types_pb2.StructuredAnnotation, _Mapping]]] = ..., platform_properties: _Optional[_Union[PlatformProperties, _Mapping]] = ...) -> None: ...

class P4Ids(_message.Message):
    __slots__ = ()
    class Prefix(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[P4Ids.Prefix]
        ACTION: _ClassVar[P4Ids.Prefix]
        TABLE: _ClassVar[P4Ids.Prefix]
        VALUE_SET: _ClassVar[P4Ids.Prefix]
        CONTROLLER_HEADER: _ClassVar[P4Ids.Prefix]
        PSA_EXTERNS_START: _ClassVar[P4Ids.Prefix]
        ACTION_PROFILE: _ClassVar[P4Ids.Prefix]
        COUNTER: _ClassVar[P4Ids.Prefix]
        DIRECT_COUNTER: _ClassVar[P4Ids.Prefix]
        METER: _ClassVar[P4Ids.Prefix]
        DIRECT_METER: _ClassVar[P4Ids.Prefix]
        REGISTER: _ClassVar[P4Ids.Prefix]
        DIGEST: _ClassVar[P4Ids.Prefix]
        OTHER_EXTERNS_START: _ClassVar[P4Ids.Prefix]
        MAX: _ClassVar[P4Ids.Prefix]
    UNSPECIFIED: P4Ids.Prefix
    ACTION: P4Ids.Prefix
    TABLE: P4Ids.Prefix
    VALUE_SET: P4Ids.Prefix
    CONTROLLER_HEADER: P4Ids.Prefix
    PSA_EXTERNS_START: P4Ids.Prefix
    ACTION_PROFILE: P4Ids.Prefix
    COUNTER: P4Ids.Prefix
    DIRECT_COUNTER: P4Ids.Prefix
    METER: P4Ids.Prefix
    DIRECT_METER: P4Ids.Prefix
    REGISTER: P4Ids.Prefix
    DIGEST: P4Ids.Prefix
    OTHER_EXTERNS_START: P4Ids.Prefix
    MAX: P4Ids.Prefix
    def __init__(self) -> None: ...

class Preamble(_message.Message):
    __slots__ = ("id", "name", "alias", "annotations", "annotation_locations", "doc", "structured_annotations")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    alias: str
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.SourceLocation]
    doc: Documentation
    structured_annotations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.StructuredAnnotation]
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., alias: _Optional[str] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[_p4types_pb2.SourceLocation, _Mapping]]] = ..., doc: _Optional[_Union[Documentation, _Mapping]] = ..., structured_annotations: _Optional[_Iterable[_Union[_p4types_pb2.StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class Extern(_message.Message):
    __slots__ = ("extern_type_id", "extern_type_name", "instances")
    EXTERN_TYPE_ID_FIELD_NUMBER: _ClassVar[int]
    EXTERN_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    extern_type_id: int
    extern_type_name: str
    instances: _containers.RepeatedCompositeFieldContainer[ExternInstance]
    def __init__(self, extern_type_id: _Optional[int] = ..., extern_type_name: _Optional[str] = ..., instances: _Optional[_Iterable[_Union[ExternInstance, _Mapping]]] = ...) -> None: ...

class ExternInstance(_message.Message):
    __slots__ = ("preamble", "info")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    info: _any_pb2.Any
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., info: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class MatchField(_message.Message):
    __slots__ = ("id", "name", "annotations", "annotation_locations", "bitwidth", "match_type", "other_match_type", "doc", "type_name", "structured_annotations")
    class MatchType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[MatchField.MatchType]
        EXACT: _ClassVar[MatchField.MatchType]
        LPM: _ClassVar[MatchField.MatchType]
        TERNARY: _ClassVar[MatchField.MatchType]
        RANGE: _ClassVar[MatchField.MatchType]
        OPTIONAL: _ClassVar[MatchField.MatchType]
    UNSPECIFIED: MatchField.MatchType
    EXACT: MatchField.MatchType
    LPM: MatchField.MatchType
    TERNARY: MatchField.MatchType
    RANGE: MatchField.MatchType
    OPTIONAL: MatchField.MatchType
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    BITWIDTH_FIELD_NUMBER: _ClassVar[int]
    MATCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    OTHER_MATCH_TYPE_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.SourceLocation]
    bitwidth: int
    match_type: MatchField.MatchType
    other_match_type: str
    doc: Documentation
    type_name: _p4types_pb2.P4NamedType
    structured_annotations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.StructuredAnnotation]
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[_p4types_pb2.SourceLocation, _Mapping]]] = ..., bitwidth: _Optional[int] = ..., match_type: _Optional[_Union[MatchField.MatchType, str]] = ..., other_match_type: _Optional[str] = ..., doc: _Optional[_Union[Documentation, _Mapping]] = ..., type_name: _Optional[_Union[_p4types_pb2.P4NamedType, _Mapping]] = ..., structured_annotations: _Optional[_Iterable[_Union[_p4types_pb2.StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class TableActionCall(_message.Message):
    __slots__ = ("action_id", "arguments")
    class Argument(_message.Message):
        __slots__ = ("param_id", "value")
        PARAM_ID_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        param_id: int
        value: bytes
        def __init__(self, param_id: _Optional[int] = ..., value: _Optional[bytes] = ...) -> None: ...
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    action_id: int
    arguments: _containers.RepeatedCompositeFieldContainer[TableActionCall.Argument]
    def __init__(self, action_id: _Optional[int] = ..., arguments: _Optional[_Iterable[_Union[TableActionCall.Argument, _Mapping]]] = ...) -> None: ...

class Table(_message.Message):
    __slots__ = ("preamble", "match_fields", "action_refs", "const_default_action_id", "initial_default_action", "implementation_id", "direct_resource_ids", "size", "idle_timeout_behavior", "is_const_table", "has_initial_entries", "other_properties")
    class IdleTimeoutBehavior(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        NO_TIMEOUT: _ClassVar[Table.IdleTimeoutBehavior]
        NOTIFY_CONTROL: _ClassVar[Table.IdleTimeoutBehavior]
    NO_TIMEOUT: Table.IdleTimeoutBehavior
    NOTIFY_CONTROL: Table.IdleTimeoutBehavior
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELDS_FIELD_NUMBER: _ClassVar[int]
    ACTION_REFS_FIELD_NUMBER: _ClassVar[int]
    CONST_DEFAULT_ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    INITIAL_DEFAULT_ACTION_FIELD_NUMBER: _ClassVar[int]
    IMPLEMENTATION_ID_FIELD_NUMBER: _ClassVar[int]
    DIRECT_RESOURCE_IDS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    IS_CONST_TABLE_FIELD_NUMBER: _ClassVar[int]
    HAS_INITIAL_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    OTHER_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    match_fields: _containers.RepeatedCompositeFieldContainer[MatchField]
    action_refs: _containers.RepeatedCompositeFieldContainer[ActionRef]
    const_default_action_id: int
    initial_default_action: TableActionCall
    implementation_id: int
    direct_resource_ids: _containers.RepeatedScalarFieldContainer[int]
    size: int
    idle_timeout_behavior: Table.IdleTimeoutBehavior
    is_const_table: bool
    has_initial_entries: bool
    other_properties: _any_pb2.Any
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., match_fields: _Optional[_Iterable[_Union[MatchField, _Mapping]]] = ..., action_refs: _Optional[_Iterable[_Union[ActionRef, _Mapping]]] = ..., const_default_action_id: _Optional[int] = ..., initial_default_action: _Optional[_Union[TableActionCall, _Mapping]] = ..., implementation_id: _Optional[int] = ..., direct_resource_ids: _Optional[_Iterable[int]] = ..., size: _Optional[int] = ..., idle_timeout_behavior: _Optional[_Union[Table.IdleTimeoutBehavior, str]] = ..., is_const_table: _Optional[bool] = ..., has_initial_entries: _Optional[bool] = ..., other_properties: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class ActionRef(_message.Message):
    __slots__ = ("id", "scope", "annotations", "annotation_locations", "structured_annotations")
    class Scope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TABLE_AND_DEFAULT: _ClassVar[ActionRef.Scope]
        TABLE_ONLY: _ClassVar[ActionRef.Scope]
        DEFAULT_ONLY: _ClassVar[ActionRef.Scope]
    TABLE_AND_DEFAULT: ActionRef.Scope
    TABLE_ONLY: ActionRef.Scope
    DEFAULT_ONLY: ActionRef.Scope
    ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    id: int
    scope: ActionRef.Scope
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.StructuredAnnotation]
    def __init__(self, id: _Optional[int] = ..., scope: _Optional[_Union[ActionRef.Scope, str]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[_p4types_pb2.SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[_p4types_pb2.StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("preamble", "params")
    class Param(_message.Message):
        __slots__ = ("id", "name", "annotations", "annotation_locations", "bitwidth", "doc", "type_name", "structured_annotations")
        ID_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
        BITWIDTH_FIELD_NUMBER: _ClassVar[int]
        DOC_FIELD_NUMBER: _ClassVar[int]
        TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
        STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        id: int
        name: str
        annotations: _containers.RepeatedScalarFieldContainer[str]
        annotation_locations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.SourceLocation]
        bitwidth: int
        doc: Documentation
        type_name: _p4types_pb2.P4NamedType
        structured_annotations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.StructuredAnnotation]
        def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[_p4types_pb2.SourceLocation, _Mapping]]] = ..., bitwidth: _Optional[int] = ..., doc: _Optional[_Union[Documentation, _Mapping]] = ..., type_name: _Optional[_Union[_p4types_pb2.P4NamedType, _Mapping]] = ..., structured_annotations: _Optional[_Iterable[_Union[_p4types_pb2.StructuredAnnotation, _Mapping]]] = ...) -> None: ...
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    params: _containers.RepeatedCompositeFieldContainer[Action.Param]
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., params: _Optional[_Iterable[_Union[Action.Param, _Mapping]]] = ...) -> None: ...

class ActionProfile(_message.Message):
    __slots__ = ("preamble", "table_ids", "with_selector", "size", "max_group_size", "sum_of_weights", "sum_of_members", "weights_disallowed")
    class SumOfWeights(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class SumOfMembers(_message.Message):
        __slots__ = ("max_member_weight",)
        MAX_MEMBER_WEIGHT_FIELD_NUMBER: _ClassVar[int]
        max_member_weight: int
        def __init__(self, max_member_weight: _Optional[int] = ...) -> None: ...
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    TABLE_IDS_FIELD_NUMBER: _ClassVar[int]
    WITH_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    SUM_OF_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    SUM_OF_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_DISALLOWED_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    table_ids: _containers.RepeatedScalarFieldContainer[int]
    with_selector: bool
    size: int
    max_group_size: int
    sum_of_weights: ActionProfile.SumOfWeights
    sum_of_members: ActionProfile.SumOfMembers
    weights_disallowed: bool
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., table_ids: _Optional[_Iterable[int]] = ..., with_selector: _Optional[bool] = ..., size: _Optional[int] = ..., max_group_size: _Optional[int] = ..., sum_of_weights: _Optional[_Union[ActionProfile.SumOfWeights, _Mapping]] = ..., sum_of_members: _Optional[_Union[ActionProfile.SumOfMembers, _Mapping]] = ..., weights_disallowed: _Optional[bool] = ...) -> None: ...

class CounterSpec(_message.Message):
    __slots__ = ("unit",)
    class Unit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[CounterSpec.Unit]
        BYTES: _ClassVar[CounterSpec.Unit]
        PACKETS: _ClassVar[CounterSpec.Unit]
        BOTH: _ClassVar[CounterSpec.Unit]
    UNSPECIFIED: CounterSpec.Unit
    BYTES: CounterSpec.Unit
    PACKETS: CounterSpec.Unit
    BOTH: CounterSpec.Unit
    UNIT_FIELD_NUMBER: _ClassVar[int]
    unit: CounterSpec.Unit
    def __init__(self, unit: _Optional[_Union[CounterSpec.Unit, str]] = ...) -> None: ...

class Counter(_message.Message):
    __slots__ = ("preamble", "spec", "size", "index_type_name")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    INDEX_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    spec: CounterSpec
    size: int
    index_type_name: _p4types_pb2.P4NamedType
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., spec: _Optional[_Union[CounterSpec, _Mapping]] = ..., size: _Optional[int] = ..., index_type_name: _Optional[_Union[_p4types_pb2.P4NamedType, _Mapping]] = ...) -> None: ...

class DirectCounter(_message.Message):
    __slots__ = ("preamble", "spec", "direct_table_id")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    DIRECT_TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    spec: CounterSpec
    direct_table_id: int
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., spec: _Optional[_Union[CounterSpec, _Mapping]] = ..., direct_table_id: _Optional[int] = ...) -> None: ...

class MeterSpec(_message.Message):
    __slots__ = ("unit", "type")
    class Unit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[MeterSpec.Unit]
        BYTES: _ClassVar[MeterSpec.Unit]
        PACKETS: _ClassVar[MeterSpec.Unit]
    UNSPECIFIED: MeterSpec.Unit
    BYTES: MeterSpec.Unit
    PACKETS: MeterSpec.Unit
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TWO_RATE_THREE_COLOR: _ClassVar[MeterSpec.Type]
        SINGLE_RATE_THREE_COLOR: _ClassVar[MeterSpec.Type]
        SINGLE_RATE_TWO_COLOR: _ClassVar[MeterSpec.Type]
    TWO_RATE_THREE_COLOR: MeterSpec.Type
    SINGLE_RATE_THREE_COLOR: MeterSpec.Type
    SINGLE_RATE_TWO_COLOR: MeterSpec.Type
    UNIT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    unit: MeterSpec.Unit
    type: MeterSpec.Type
    def __init__(self, unit: _Optional[_Union[MeterSpec.Unit, str]] = ..., type: _Optional[_Union[MeterSpec.Type, str]] = ...) -> None: ...

class Meter(_message.Message):
    __slots__ = ("preamble", "spec", "size", "index_type_name")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    INDEX_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    spec: MeterSpec
    size: int
    index_type_name: _p4types_pb2.P4NamedType
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., spec: _Optional[_Union[MeterSpec, _Mapping]] = ..., size: _Optional[int] = ..., index_type_name: _Optional[_Union[_p4types_pb2.P4NamedType, _Mapping]] = ...) -> None: ...

class DirectMeter(_message.Message):
    __slots__ = ("preamble", "spec", "direct_table_id")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    DIRECT_TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    spec: MeterSpec
    direct_table_id: int
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., spec: _Optional[_Union[MeterSpec, _Mapping]] = ..., direct_table_id: _Optional[int] = ...) -> None: ...

class ControllerPacketMetadata(_message.Message):
    __slots__ = ("preamble", "metadata")
    class Metadata(_message.Message):
        __slots__ = ("id", "name", "annotations", "annotation_locations", "bitwidth", "type_name", "structured_annotations")
        ID_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
        BITWIDTH_FIELD_NUMBER: _ClassVar[int]
        TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
        STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        id: int
        name: str
        annotations: _containers.RepeatedScalarFieldContainer[str]
        annotation_locations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.SourceLocation]
        bitwidth: int
        type_name: _p4types_pb2.P4NamedType
        structured_annotations: _containers.RepeatedCompositeFieldContainer[_p4types_pb2.StructuredAnnotation]
        def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[_p4types_pb2.SourceLocation, _Mapping]]] = ..., bitwidth: _Optional[int] = ..., type_name: _Optional[_Union[_p4types_pb2.P4NamedType, _Mapping]] = ..., structured_annotations: _Optional[_Iterable[_Union[_p4types_pb2.StructuredAnnotation, _Mapping]]] = ...) -> None: ...
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    metadata: _containers.RepeatedCompositeFieldContainer[ControllerPacketMetadata.Metadata]
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., metadata: _Optional[_Iterable[_Union[ControllerPacketMetadata.Metadata, _Mapping]]] = ...) -> None: ...

class ValueSet(_message.Message):
    __slots__ = ("preamble", "match", "size")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    match: _containers.RepeatedCompositeFieldContainer[MatchField]
    size: int
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., match: _Optional[_Iterable[_Union[MatchField, _Mapping]]] = ..., size: _Optional[int] = ...) -> None: ...

class Register(_message.Message):
    __slots__ = ("preamble", "type_spec", "size", "index_type_name")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    TYPE_SPEC_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    INDEX_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    type_spec: _p4types_pb2.P4DataTypeSpec
    size: int
    index_type_name: _p4types_pb2.P4NamedType
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., type_spec: _Optional[_Union[_p4types_pb2.P4DataTypeSpec, _Mapping]] = ..., size: _Optional[int] = ..., index_type_name: _Optional[_Union[_p4types_pb2.P4NamedType, _Mapping]] = ...) -> None: ...

class Digest(_message.Message):
    __slots__ = ("preamble", "type_spec")
    PREAMBLE_FIELD_NUMBER: _ClassVar[int]
    TYPE_SPEC_FIELD_NUMBER: _ClassVar[int]
    preamble: Preamble
    type_spec: _p4types_pb2.P4DataTypeSpec
    def __init__(self, preamble: _Optional[_Union[Preamble, _Mapping]] = ..., type_spec: _Optional[_Union[_p4types_pb2.P4DataTypeSpec, _Mapping]] = ...) -> None: ...

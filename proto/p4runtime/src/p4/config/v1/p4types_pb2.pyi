from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class P4TypeInfo(_message.Message):
    __slots__ = ("structs", "headers", "header_unions", "enums", "error", "serializable_enums", "new_types")
    class StructsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: P4StructTypeSpec
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[P4StructTypeSpec, _Mapping]] = ...) -> None: ...
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: P4HeaderTypeSpec
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[P4HeaderTypeSpec, _Mapping]] = ...) -> None: ...
    class HeaderUnionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: P4HeaderUnionTypeSpec
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[P4HeaderUnionTypeSpec, _Mapping]] = ...) -> None: ...
    class EnumsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: P4EnumTypeSpec
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[P4EnumTypeSpec, _Mapping]] = ...) -> None: ...
    class SerializableEnumsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: P4SerializableEnumTypeSpec
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[P4SerializableEnumTypeSpec, _Mapping]] = ...) -> None: ...
    class NewTypesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: P4NewTypeSpec
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[P4NewTypeSpec, _Mapping]] = ...) -> None: ...
    STRUCTS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    HEADER_UNIONS_FIELD_NUMBER: _ClassVar[int]
    ENUMS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SERIALIZABLE_ENUMS_FIELD_NUMBER: _ClassVar[int]
    NEW_TYPES_FIELD_NUMBER: _ClassVar[int]
    structs: _containers.MessageMap[str, P4StructTypeSpec]
    headers: _containers.MessageMap[str, P4HeaderTypeSpec]
    header_unions: _containers.MessageMap[str, P4HeaderUnionTypeSpec]
    enums: _containers.MessageMap[str, P4EnumTypeSpec]
    error: P4ErrorTypeSpec
    serializable_enums: _containers.MessageMap[str, P4SerializableEnumTypeSpec]
    new_types: _containers.MessageMap[str, P4NewTypeSpec]
    def __init__(self, structs: _Optional[_Mapping[str, P4StructTypeSpec]] = ..., headers: _Optional[_Mapping[str, P4HeaderTypeSpec]] = ..., header_unions: _Optional[_Mapping[str, P4HeaderUnionTypeSpec]] = ..., enums: _Optional[_Mapping[str, P4EnumTypeSpec]] = ..., error: _Optional[_Union[P4ErrorTypeSpec, _Mapping]] = ..., serializable_enums: _Optional[_Mapping[str, P4SerializableEnumTypeSpec]] = ..., new_types: _Optional[_Mapping[str, P4NewTypeSpec]] = ...) -> None: ...

class P4DataTypeSpec(_message.Message):
    __slots__ = ("bitstring", "bool", "tuple", "struct", "header", "header_union", "header_stack", "header_union_stack", "enum", "error", "serializable_enum", "new_type")
    BITSTRING_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    TUPLE_FIELD_NUMBER: _ClassVar[int]
    STRUCT_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    HEADER_UNION_FIELD_NUMBER: _ClassVar[int]
    HEADER_STACK_FIELD_NUMBER: _ClassVar[int]
    HEADER_UNION_STACK_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SERIALIZABLE_ENUM_FIELD_NUMBER: _ClassVar[int]
    NEW_TYPE_FIELD_NUMBER: _ClassVar[int]
    bitstring: P4BitstringLikeTypeSpec
    bool: P4BoolType
    tuple: P4TupleTypeSpec
    struct: P4NamedType
    header: P4NamedType
    header_union: P4NamedType
    header_stack: P4HeaderStackTypeSpec
    header_union_stack: P4HeaderUnionStackTypeSpec
    enum: P4NamedType
    error: P4ErrorType
    serializable_enum: P4NamedType
    new_type: P4NamedType
    def __init__(self, bitstring: _Optional[_Union[P4BitstringLikeTypeSpec, _Mapping]] = ..., bool: _Optional[_Union[P4BoolType, _Mapping]] = ..., tuple: _Optional[_Union[P4TupleTypeSpec, _Mapping]] = ..., struct: _Optional[_Union[P4NamedType, _Mapping]] = ..., header: _Optional[_Union[P4NamedType, _Mapping]] = ..., header_union: _Optional[_Union[P4NamedType, _Mapping]] = ..., header_stack: _Optional[_Union[P4HeaderStackTypeSpec, _Mapping]] = ..., header_union_stack: _Optional[_Union[P4HeaderUnionStackTypeSpec, _Mapping]] = ..., enum: _Optional[_Union[P4NamedType, _Mapping]] = ..., error: _Optional[_Union[P4ErrorType, _Mapping]] = ..., serializable_enum: _Optional[_Union[P4NamedType, _Mapping]] = ..., new_type: _Optional[_Union[P4NamedType, _Mapping]] = ...) -> None: ...

class P4NamedType(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class P4BoolType(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class P4ErrorType(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class P4BitstringLikeTypeSpec(_message.Message):
    __slots__ = ("bit", "int", "varbit", "annotations", "annotation_locations", "structured_annotations")
    BIT_FIELD_NUMBER: _ClassVar[int]
    INT_FIELD_NUMBER: _ClassVar[int]
    VARBIT_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    bit: P4BitTypeSpec
    int: P4IntTypeSpec
    varbit: P4VarbitTypeSpec
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
    def __init__(self, bit: _Optional[_Union[P4BitTypeSpec, _Mapping]] = ..., int: _Optional[_Union[P4IntTypeSpec, _Mapping]] = ..., varbit: _Optional[_Union[P4VarbitTypeSpec, _Mapping]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class P4BitTypeSpec(_message.Message):
    __slots__ = ("bitwidth",)
    BITWIDTH_FIELD_NUMBER: _ClassVar[int]
    bitwidth: int
    def __init__(self, bitwidth: _Optional[int] = ...) -> None: ...

class P4IntTypeSpec(_message.Message):
    __slots__ = ("bitwidth",)
    BITWIDTH_FIELD_NUMBER: _ClassVar[int]
    bitwidth: int
    def __init__(self, bitwidth: _Optional[int] = ...) -> None: ...

class P4VarbitTypeSpec(_message.Message):
    __slots__ = ("max_bitwidth",)
    MAX_BITWIDTH_FIELD_NUMBER: _ClassVar[int]
    max_bitwidth: int
    def __init__(self, max_bitwidth: _Optional[int] = ...) -> None: ...

class P4TupleTypeSpec(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[P4DataTypeSpec]
    def __init__(self, members: _Optional[_Iterable[_Union[P4DataTypeSpec, _Mapping]]] = ...) -> None: ...

class P4StructTypeSpec(_message.Message):
    __slots__ = ("members", "annotations", "annotation_locations", "structured_annotations")
    class Member(_message.Message):
        __slots__ = ("name", "type_spec")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TYPE_SPEC_FIELD_NUMBER: _ClassVar[int]
        name: str
        type_spec: P4DataTypeSpec
        def __init__(self, name: _Optional[str] = ..., type_spec: _Optional[_Union[P4DataTypeSpec, _Mapping]] = ...) -> None: ...
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[P4StructTypeSpec.Member]
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
    def __init__(self, members: _Optional[_Iterable[_Union[P4StructTypeSpec.Member, _Mapping]]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class P4HeaderTypeSpec(_message.Message):
    __slots__ = ("members", "annotations", "annotation_locations", "structured_annotations")
    class Member(_message.Message):
        __slots__ = ("name", "type_spec")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TYPE_SPEC_FIELD_NUMBER: _ClassVar[int]
        name: str
        type_spec: P4BitstringLikeTypeSpec
        def __init__(self, name: _Optional[str] = ..., type_spec: _Optional[_Union[P4BitstringLikeTypeSpec, _Mapping]] = ...) -> None: ...
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[P4HeaderTypeSpec.Member]
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
    def __init__(self, members: _Optional[_Iterable[_Union[P4HeaderTypeSpec.Member, _Mapping]]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class P4HeaderUnionTypeSpec(_message.Message):
    __slots__ = ("members", "annotations", "annotation_locations", "structured_annotations")
    class Member(_message.Message):
        __slots__ = ("name", "header")
        NAME_FIELD_NUMBER: _ClassVar[int]
        HEADER_FIELD_NUMBER: _ClassVar[int]
        name: str
        header: P4NamedType
        def __init__(self, name: _Optional[str] = ..., header: _Optional[_Union[P4NamedType, _Mapping]] = ...) -> None: ...
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[P4HeaderUnionTypeSpec.Member]
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
    def __init__(self, members: _Optional[_Iterable[_Union[P4HeaderUnionTypeSpec.Member, _Mapping]]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class P4HeaderStackTypeSpec(_message.Message):
    __slots__ = ("header", "size")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    header: P4NamedType
    size: int
    def __init__(self, header: _Optional[_Union[P4NamedType, _Mapping]] = ..., size: _Optional[int] = ...) -> None: ...

class P4HeaderUnionStackTypeSpec(_message.Message):
    __slots__ = ("header_union", "size")
    HEADER_UNION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    header_union: P4NamedType
    size: int
    def __init__(self, header_union: _Optional[_Union[P4NamedType, _Mapping]] = ..., size: _Optional[int] = ...) -> None: ...

class KeyValuePair(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: Expression
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Expression, _Mapping]] = ...) -> None: ...

class KeyValuePairList(_message.Message):
    __slots__ = ("kv_pairs",)
    KV_PAIRS_FIELD_NUMBER: _ClassVar[int]
    kv_pairs: _containers.RepeatedCompositeFieldContainer[KeyValuePair]
    def __init__(self, kv_pairs: _Optional[_Iterable[_Union[KeyValuePair, _Mapping]]] = ...) -> None: ...

class Expression(_message.Message):
    __slots__ = ("string_value", "int64_value", "bool_value")
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT64_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    string_value: str
    int64_value: int
    bool_value: bool
    def __init__(self, string_value: _Optional[str] = ..., int64_value: _Optional[int] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class ExpressionList(_message.Message):
    __slots__ = ("expressions",)
    EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    expressions: _containers.RepeatedCompositeFieldContainer[Expression]
    def __init__(self, expressions: _Optional[_Iterable[_Union[Expression, _Mapping]]] = ...) -> None: ...

class StructuredAnnotation(_message.Message):
    __slots__ = ("name", "expression_list", "kv_pair_list", "source_location")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_LIST_FIELD_NUMBER: _ClassVar[int]
    KV_PAIR_LIST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LOCATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    expression_list: ExpressionList
    kv_pair_list: KeyValuePairList
    source_location: SourceLocation
    def __init__(self, name: _Optional[str] = ..., expression_list: _Optional[_Union[ExpressionList, _Mapping]] = ..., kv_pair_list: _Optional[_Union[KeyValuePairList, _Mapping]] = ..., source_location: _Optional[_Union[SourceLocation, _Mapping]] = ...) -> None: ...

class SourceLocation(_message.Message):
    __slots__ = ("file", "line", "column")
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    file: str
    line: int
    column: int
    def __init__(self, file: _Optional[str] = ..., line: _Optional[int] = ..., column: _Optional[int] = ...) -> None: ...

class P4EnumTypeSpec(_message.Message):
    __slots__ = ("members", "annotations", "annotation_locations", "structured_annotations")
    class Member(_message.Message):
        __slots__ = ("name", "annotations", "annotation_locations", "structured_annotations")
        NAME_FIELD_NUMBER: _ClassVar[int]
        ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
        STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        annotations: _containers.RepeatedScalarFieldContainer[str]
        annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
        structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
        def __init__(self, name: _Optional[str] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[P4EnumTypeSpec.Member]
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
    def __init__(self, members: _Optional[_Iterable[_Union[P4EnumTypeSpec.Member, _Mapping]]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class P4SerializableEnumTypeSpec(_message.Message):
    __slots__ = ("underlying_type", "members", "annotations", "annotation_locations", "structured_annotations")
    class Member(_message.Message):
        __slots__ = ("name", "value", "annotations", "annotation_locations", "structured_annotations")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
        STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        value: bytes
        annotations: _containers.RepeatedScalarFieldContainer[str]
        annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
        structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
        def __init__(self, name: _Optional[str] = ..., value: _Optional[bytes] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...
    UNDERLYING_TYPE_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    underlying_type: P4BitTypeSpec
    members: _containers.RepeatedCompositeFieldContainer[P4SerializableEnumTypeSpec.Member]
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
    def __init__(self, underlying_type: _Optional[_Union[P4BitTypeSpec, _Mapping]] = ..., members: _Optional[_Iterable[_Union[P4SerializableEnumTypeSpec.Member, _Mapping]]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...

class P4ErrorTypeSpec(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, members: _Optional[_Iterable[str]] = ...) -> None: ...

class P4NewTypeTranslation(_message.Message):
    __slots__ = ("uri", "sdn_bitwidth", "sdn_string")
    class SdnString(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    URI_FIELD_NUMBER: _ClassVar[int]
    SDN_BITWIDTH_FIELD_NUMBER: _ClassVar[int]
    SDN_STRING_FIELD_NUMBER: _ClassVar[int]
    uri: str
    sdn_bitwidth: int
    sdn_string: P4NewTypeTranslation.SdnString
    def __init__(self, uri: _Optional[str] = ..., sdn_bitwidth: _Optional[int] = ..., sdn_string: _Optional[_Union[P4NewTypeTranslation.SdnString, _Mapping]] = ...) -> None: ...

class P4NewTypeSpec(_message.Message):
    __slots__ = ("original_type", "translated_type", "annotations", "annotation_locations", "structured_annotations")
    ORIGINAL_TYPE_FIELD_NUMBER: _ClassVar[int]
    TRANSLATED_TYPE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    original_type: P4DataTypeSpec
    translated_type: P4NewTypeTranslation
    annotations: _containers.RepeatedScalarFieldContainer[str]
    annotation_locations: _containers.RepeatedCompositeFieldContainer[SourceLocation]
    structured_annotations: _containers.RepeatedCompositeFieldContainer[StructuredAnnotation]
    def __init__(self, original_type: _Optional[_Union[P4DataTypeSpec, _Mapping]] = ..., translated_type: _Optional[_Union[P4NewTypeTranslation, _Mapping]] = ..., annotations: _Optional[_Iterable[str]] = ..., annotation_locations: _Optional[_Iterable[_Union[SourceLocation, _Mapping]]] = ..., structured_annotations: _Optional[_Iterable[_Union[StructuredAnnotation, _Mapping]]] = ...) -> None: ...

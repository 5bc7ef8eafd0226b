"""Reads Parquet files with pyarrow (an independent reader) and prints, as JSON, each file's column
types, key-value metadata, row groups and codec, and every row with values in exact, comparable text:
integers and decimals as digits, floats as their IEEE-754 bits in hex, dates as epoch days,
timestamps as epoch microseconds, bytes and UUIDs as hex."""
import decimal
import json
import struct
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq


def enc(value, arrow_type):
    if value is None:
        return None
    if isinstance(value, list):
        return [enc(v, arrow_type.value_type) for v in value]
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float):
        return struct.pack('>f' if arrow_type == pa.float32() else '>d', value).hex()
    if isinstance(value, decimal.Decimal):
        return format(value, 'f')
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def column_values(column):
    if pa.types.is_date32(column.type):
        column = column.cast(pa.int32())
    elif pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    return [enc(v, column.type) for v in column.to_pylist()]


out = []
for path in sys.argv[1:]:
    handle = pq.ParquetFile(path)
    schema = handle.schema
    table = handle.read()
    columns = [column_values(table.column(i)) for i in range(table.num_columns)]
    meta = handle.metadata
    out.append({
        'columns': [{'path': c.path, 'physical': c.physical_type, 'logical': str(c.logical_type), 'length': c.length} for c in schema],
        'names': table.column_names,
        'kv': {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()},
        'rowGroups': meta.num_row_groups,
        'codec': meta.row_group(0).column(0).compression if meta.num_row_groups else None,
        'rows': [list(r) for r in zip(*columns)] if columns else [],
    })
json.dump(out, sys.stdout)

"""Reading MCAP files back with the ``mcap`` reader (tests of issue 44)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory


@dataclass
class Recording:
    """An MCAP file as read back: per topic its schema name, encoding and decoded messages
    (protobuf messages, or dicts for JSON channels) with their log times (ns)."""

    schemas: dict[str, str] = field(default_factory=dict)
    encodings: dict[str, str] = field(default_factory=dict)
    messages: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    log_times: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, int] = field(default_factory=dict)


def read_mcap(path: Path) -> Recording:
    rec = Recording()
    with path.open("rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None, "no summary: not finished"
        for channel in summary.channels.values():
            rec.schemas[channel.topic] = summary.schemas[channel.schema_id].name
            rec.encodings[channel.topic] = channel.message_encoding
            rec.counts[channel.topic] = summary.statistics.channel_message_counts.get(channel.id, 0)
        for _schema, channel, message in reader.iter_messages(log_time_order=False):
            rec.log_times[channel.topic].append(message.log_time)
            if channel.message_encoding == "json":
                rec.messages[channel.topic].append(json.loads(message.data))
        f.seek(0)
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        protobuf = [t for t, enc in rec.encodings.items() if enc == "protobuf"]
        for _schema, channel, _message, decoded in reader.iter_decoded_messages(
            topics=protobuf, log_time_order=False
        ):
            rec.messages[channel.topic].append(decoded)
    return rec


def yaw_of(q: Any) -> float:
    """Heading (radians) of a quaternion with only yaw."""
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))

"""Decompression bombs for the tests of issue 21 item 10: tiny files, huge decoded images."""

from __future__ import annotations

import struct
import zlib


def png_bomb(width: int = 9000, height: int = 9000) -> bytes:
    """A 1-bit, all-black PNG built row by row: about 10 KB for 9000x9000 pixels, 324 MB once
    decoded at 4 bytes a pixel."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    packer = zlib.compressobj(9)
    row = b"\0" * (1 + (width + 7) // 8)  # filter byte + packed bits
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )

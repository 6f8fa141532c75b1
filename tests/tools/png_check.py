#!/usr/bin/env python3
"""Checks that a PNG screenshot shows something (stdlib only: no imaging library needed).

usage: png_check.py SHOT.png MIN_INK_PERCENT MIN_COLOURS
Decodes an 8-bit RGB or RGBA non-interlaced PNG (what Chromium writes), then requires at least
MIN_INK_PERCENT % of the pixels to differ from the most common (background) colour and at least
MIN_COLOURS distinct saturated colours (text alone is grey; charts add colours).
Prints what it measured; exit 0 if both hold, 1 otherwise.
"""
import struct
import sys
import zlib
from collections import Counter


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        sys.exit(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main(path, min_ink, min_colours):
    width, height, bpp, rows = read_png(path)
    pixels = Counter()
    for line in rows:
        for x in range(0, len(line), bpp):
            pixels[line[x:x + 3]] += 1
    background, _ = pixels.most_common(1)[0]
    ink = sum(n for colour, n in pixels.items() if colour != background)
    ink_pct = 100.0 * ink / (width * height)
    # Saturated colours of at least 50 pixels: chart fills (text and rules are grey, anti-aliasing
    # shades are few pixels each).
    colours = sum(1 for colour, n in pixels.items() if max(colour) - min(colour) > 60 and n >= 50)
    print(f"{path}: {width}x{height}, {ink_pct:.1f}% ink, {colours} colours")
    sys.exit(0 if ink_pct >= float(min_ink) and colours >= int(min_colours) else 1)


if __name__ == "__main__":
    main(*sys.argv[1:4])

import struct
def px(x, y):  # a pattern whose every pixel differs
    return ((x * 37 + y * 11) % 256, (x * 5 + y * 60) % 256, (200 - x * 20 - y * 7) % 256)
def write(name, w, h, bpp, comp, rows_bytes, topdown=False, palette=b"", dib=40, extra=b""):
    data = b"".join(rows_bytes)
    hdr = struct.pack("<IiiHHIIiiII", 40, w, -h if topdown else h, 1, bpp, comp, len(data), 2835, 2835, len(palette)//4 if palette else 0, 0)
    off = 14 + 40 + len(extra) + len(palette)
    fh = b"BM" + struct.pack("<IHHI", off + len(data), 0, 0, off)
    open(name, "wb").write(fh + hdr + extra + palette + data)
def pad(b):
    return b + b"\0" * ((-len(b)) % 4)
W, H = 7, 5
# 24-bit top-down: first stored row is the top
write("td24.bmp", W, H, 24, 0, [pad(b"".join(bytes((px(x,y)[2], px(x,y)[1], px(x,y)[0])) for x in range(W))) for y in range(H)], topdown=True)
# 32-bit BI_RGB (BGRX; X ignored even when not zero)
write("bgrx32.bmp", W, H, 32, 0, [b"".join(bytes((px(x,y)[2], px(x,y)[1], px(x,y)[0], 0x55)) for x in range(W)) for y in reversed(range(H))])
# 16-bit BI_RGB: 5-5-5
def p555(c):
    r, g, b = (v >> 3 for v in c)
    return struct.pack("<H", (r << 10) | (g << 5) | b)
write("rgb555.bmp", W, H, 16, 0, [pad(b"".join(p555(px(x,y)) for x in range(W))) for y in reversed(range(H))])
# RLE4, 9x4, 4 palette entries: runs, an absolute run, an early end of row, a delta, and end of bitmap.
pal = b"".join(bytes((b, g, r, 0)) for r, g, b in [(0,0,0),(255,0,0),(0,255,0),(0,0,255),(255,255,255)])
pal += b"\0" * (16 * 4 - len(pal))
rle = bytes([
    9, 0x12,          # bottom row: 1,2,1,2,1,2,1,2,1
    0, 0,             # end of row
    0, 5, 0x34, 0x12, 0x30, 0,  # absolute: 3,4,1,2,3 (3 bytes, padded to 4)
    2, 0x44,          # 4,4
    0, 0,             # end of row (x=7: the last 2 pixels stay transparent)
    0, 2, 3, 1,       # delta: right 3, up 1 (row 2 skipped entirely, now row 3 at x=3)
    3, 0x20,          # 2,0,2 at x=3..5
    0, 1,             # end of bitmap: the rest of row 3 stays transparent
])
write("rle4.bmp", 9, 4, 4, 2, [rle], palette=pal)

"""Blurs a small picture on the GPU with a storage-image shader.

The program makes its own 64 x 64 RGBA picture (a colour gradient with a
white square), uploads it as a kp.Image of uint8 texels (rgba8ui), runs a 3 x 3
box blur (edges clamped) over it, checks the result against numpy, and writes
the input and the output as binary PPM files (alpha dropped). Exits non-zero
if the GPU's result differs from numpy's.

    python examples/python/image_filter.py [output-directory]
"""

import pathlib
import sys

import numpy as np

import kp

WIDTH = HEIGHT = 64
LOCAL = 8  # local workgroup size in x and y

SHADER = """
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, rgba8ui) uniform readonly uimage2D source;
layout(set = 0, binding = 1, rgba8ui) uniform writeonly uimage2D target;

void main()
{
    ivec2 size = imageSize(source);
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= size.x || p.y >= size.y) {
        return;
    }
    uvec4 sum = uvec4(0);
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            sum += imageLoad(source, clamp(p + ivec2(dx, dy), ivec2(0), size - 1));
        }
    }
    imageStore(target, p, (sum + 4u) / 9u);  // rounded mean
}
"""


def make_picture(width, height):
    """An RGBA gradient (red across, green down, blue constant) with a white
    square in the middle, as uint8 of shape (height, width, 4)."""
    y, x = np.mgrid[0:height, 0:width]
    picture = np.empty((height, width, 4), dtype=np.uint8)
    picture[..., 0] = x * 255 // (width - 1)
    picture[..., 1] = y * 255 // (height - 1)
    picture[..., 2] = 96
    picture[..., 3] = 255
    picture[height // 4:3 * height // 4, width // 4:3 * width // 4, :3] = 255
    return picture


def blur_numpy(picture):
    """The shader's 3 x 3 box blur, edges clamped, rounded mean."""
    height, width = picture.shape[:2]
    padded = np.pad(picture.astype(np.uint32), ((1, 1), (1, 1), (0, 0)), mode="edge")
    total = sum(padded[dy:dy + height, dx:dx + width] for dy in range(3) for dx in range(3))
    return ((total + 4) // 9).astype(np.uint8)


def write_ppm(path, picture):
    """Writes the RGB channels of an (height, width, 4) uint8 array as binary PPM."""
    height, width = picture.shape[:2]
    with open(path, "wb") as file:
        file.write(f"P6\n{width} {height}\n255\n".encode("ascii"))
        file.write(np.ascontiguousarray(picture[..., :3]).tobytes())


def main():
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    picture = make_picture(WIDTH, HEIGHT)

    with kp.Manager() as mgr:
        print("Device:", mgr.get_device_properties()["device_name"])
        source = mgr.image_t(picture)  # uploaded to the device at creation
        target = mgr.image_t(WIDTH, HEIGHT, 4, np.uint8)
        groups = ((WIDTH + LOCAL - 1) // LOCAL, (HEIGHT + LOCAL - 1) // LOCAL, 1)
        algorithm = mgr.algorithm([source, target], kp.compile_source(SHADER), groups)
        (mgr.sequence()
            .record(kp.OpAlgoDispatch(algorithm))
            .record(kp.OpSyncLocal([target]))  # images always need a sync to the host
            .eval())
        blurred = target.data_hwc().copy()

    input_path = out_dir / "image_filter_input.ppm"
    output_path = out_dir / "image_filter_output.ppm"
    write_ppm(input_path, picture)
    write_ppm(output_path, blurred)
    print("Input:", input_path)
    print("Output:", output_path)

    expected = blur_numpy(picture)
    if not np.array_equal(blurred, expected):
        wrong = np.argwhere(blurred != expected)
        print(f"Result differs from numpy at {len(wrong)} values, first at {tuple(wrong[0])}",
              file=sys.stderr)
        return 1
    print("Result matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())

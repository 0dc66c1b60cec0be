//! Image pre-processing: decode, resize (classification: resize the short side, centre
//! crop) or letterbox (detection), normalise, NCHW.
//!
//! Resizing uses `image`'s separable triangle (bilinear) filter, whose support widens when
//! downscaling (antialiased), as Pillow's `Image.BILINEAR` does, computed bit for bit by
//! `acceval-resample` (`resample/`); `tests/task.rs` compares the result with Pillow on the
//! same file.

use std::path::Path;

use image::RgbImage;
use ndarray::{Array4, ArrayD};

pub use crate::report::schema::run::Letterbox;

/// Why an image could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read image '{path}': {reason}")]
    Read { path: String, reason: String },
    #[error(
        "image '{path}' has {channels} channel(s) ({kind}); the model takes 3-channel RGB: convert it (e.g. `convert in.png -type TrueColor out.png`)"
    )]
    Channels {
        path: String,
        channels: u8,
        kind: String,
    },
}

/// Decodes a JPEG or PNG file into RGB8. Grey or RGBA images are an error: silently
/// converting them would measure a different pre-processing than the field's.
pub fn decode(path: &Path) -> Result<RgbImage, ImageError> {
    let bytes = std::fs::read(path).map_err(|e| ImageError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    decode_bytes(&bytes, &path.display().to_string())
}

/// The largest width or height accepted, in pixels (a 20000×20000 RGB image is 1.2 GB).
pub const MAX_SIDE: u32 = 20_000;
/// The most elongated image accepted (long side / short side): resizing a 1×20000 strip's
/// short side to 256 would allocate 5 million rows.
pub const MAX_ASPECT: u32 = 32;

pub fn decode_bytes(bytes: &[u8], label: &str) -> Result<RgbImage, ImageError> {
    let read = |reason: String| ImageError::Read {
        path: label.to_string(),
        reason,
    };
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| read(e.to_string()))?;
    match reader.format() {
        Some(image::ImageFormat::Jpeg) => {
            jpeg_complete(bytes).map_err(|e| read(format!("{e}: a truncated or corrupt JPEG")))?
        }
        Some(image::ImageFormat::Png) => {
            png_complete(bytes).map_err(|e| read(format!("{e}: a truncated or corrupt PNG")))?
        }
        _ => {}
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(2 * 1024 * 1024 * 1024);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| {
        read(match e {
            image::ImageError::Limits(_) => format!(
                "{e}: images up to {MAX_SIDE}×{MAX_SIDE} pixels are accepted; scale it down first"
            ),
            _ => format!("{e} (a corrupt or truncated JPEG/PNG?)"),
        })
    })?;
    let (w, h) = (img.width(), img.height());
    if w == 0 || h == 0 || w.max(h) / w.min(h) > MAX_ASPECT {
        return Err(read(format!(
            "the image is {w}×{h} pixels; the tasks take photographs no more elongated than {MAX_ASPECT}:1: crop it first"
        )));
    }
    let color = img.color();
    if color.channel_count() != 3 || color.has_alpha() {
        return Err(ImageError::Channels {
            path: label.to_string(),
            channels: color.channel_count(),
            kind: format!("{color:?}"),
        });
    }
    Ok(img.into_rgb8())
}

/// Whether a JPEG's marker structure reaches its end-of-image marker. `image` (zune-jpeg in
/// its default, lenient mode) fills the rows of a truncated file with grey and returns
/// success, which would grade a different image; zune-jpeg's strict mode also refuses
/// harmless quirks of real cameras (bytes between segments), so the structure is walked
/// here instead: segments are skipped by their length (an EXIF thumbnail's own EOI inside
/// APP1 is never seen), entropy-coded data is scanned to the next marker.
fn jpeg_complete(b: &[u8]) -> Result<(), String> {
    if b.len() < 4 || b[0] != 0xFF || b[1] != 0xD8 {
        return Err("no start-of-image marker".into());
    }
    let mut i = 2;
    loop {
        // Fill bytes (0xFF repeated) may precede a marker.
        while i < b.len() && b[i] == 0xFF && b.get(i + 1) == Some(&0xFF) {
            i += 1;
        }
        let (Some(&0xFF), Some(&m)) = (b.get(i), b.get(i + 1)) else {
            return Err(format!(
                "the file ends (or breaks) at byte {i} before its end-of-image marker"
            ));
        };
        i += 2;
        match m {
            0xD9 => return Ok(()),
            0x01 | 0xD0..=0xD7 => continue,
            _ => {}
        }
        let (Some(&hi), Some(&lo)) = (b.get(i), b.get(i + 1)) else {
            return Err(format!(
                "segment 0xFF{m:02X} at byte {} has no length",
                i - 2
            ));
        };
        let len = usize::from(hi) << 8 | usize::from(lo);
        if len < 2 || i + len > b.len() {
            return Err(format!(
                "segment 0xFF{m:02X} at byte {} runs past the end of the file",
                i - 2
            ));
        }
        i += len;
        if m == 0xDA {
            // Entropy-coded data: runs to the next 0xFF that is not a stuffed 0x00 or a
            // restart marker. memchr jumps to each 0xFF (SIMD): a byte-at-a-time walk over
            // a 1920×1080 frame's 370 KB of data cost about 0.3 ms of its decode.
            const CUT: &str = "the file ends inside the image data, before its end-of-image marker";
            loop {
                let Some(k) = b.get(i..).and_then(|rest| memchr::memchr(0xFF, rest)) else {
                    return Err(CUT.into());
                };
                i += k;
                match b.get(i + 1) {
                    Some(0x00 | 0xD0..=0xD7 | 0xFF) => i += 1,
                    Some(_) => break,
                    None => return Err(CUT.into()),
                }
            }
        }
    }
}

/// Whether a PNG's chunks run whole up to its IEND chunk. The decoder stops once it has
/// the pixels, so a file cut inside its last chunks would otherwise pass.
fn png_complete(b: &[u8]) -> Result<(), String> {
    let mut i = 8;
    loop {
        let Some(head) = b.get(i..i + 8) else {
            return Err(format!(
                "the file ends at byte {} before its IEND chunk",
                b.len()
            ));
        };
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let end = i.saturating_add(12).saturating_add(len);
        if end > b.len() {
            return Err(format!(
                "chunk '{}' at byte {i} runs past the end of the file",
                String::from_utf8_lossy(&head[4..8])
            ));
        }
        if &head[4..8] == b"IEND" {
            return Ok(());
        }
        i = end;
    }
}

/// Resize so the short side is `short`, then crop the centre `size`×`size`
/// (torchvision's `Resize(256)` + `CenterCrop(224)` with short = 256, size = 224).
pub fn resize_center_crop(img: RgbImage, short: u32, size: u32) -> RgbImage {
    let (w, h) = img.dimensions();
    let (nw, nh) = if w <= h {
        (
            short,
            ((h as u64 * short as u64 + w as u64 / 2) / w as u64) as u32,
        )
    } else {
        (
            ((w as u64 * short as u64 + h as u64 / 2) / h as u64) as u32,
            short,
        )
    };
    let r = resize(img, nw, nh);
    let (cw, ch) = (size.min(nw), size.min(nh));
    let x = (nw - cw) / 2;
    let y = (nh - ch) / 2;
    let mut out = RgbImage::new(cw, ch);
    blit(&r, x, y, &mut out, 0, 0, cw, ch);
    out
}

/// `image`'s triangle-filter resize (`imageops::resize` with `FilterType::Triangle`), bit
/// for bit, through `acceval-resample`, which computes it in row-wise SIMD loops: a
/// 1920×1080 frame to 640×360 took 2.7 ms instead of 16.6 (medians, release, this machine;
/// `examples/resize_timing.rs`; see `resample/src/lib.rs` for why not `fast_image_resize`).
fn resize(img: RgbImage, w: u32, h: u32) -> RgbImage {
    let (sw, sh) = img.dimensions();
    if (sw, sh) == (w, h) {
        return img;
    }
    let px = acceval_resample::triangle(
        img.as_raw(),
        sw as usize,
        sh as usize,
        3,
        w as usize,
        h as usize,
    );
    RgbImage::from_raw(w, h, px).expect("w × h × 3 bytes")
}

/// Copies the `w`×`h` block at (`sx`, `sy`) of `src` to (`dx`, `dy`) of `dst`, a row at a
/// time (the caller keeps both blocks inside their images).
#[allow(clippy::too_many_arguments)]
fn blit(src: &RgbImage, sx: u32, sy: u32, dst: &mut RgbImage, dx: u32, dy: u32, w: u32, h: u32) {
    let (sw, dw) = (src.width() as usize * 3, dst.width() as usize * 3);
    let n = w as usize * 3;
    let (s, d) = (src.as_raw(), &mut **dst);
    for r in 0..h as usize {
        let so = (sy as usize + r) * sw + sx as usize * 3;
        let dof = (dy as usize + r) * dw + dx as usize * 3;
        d[dof..dof + n].copy_from_slice(&s[so..so + n]);
    }
}

impl Letterbox {
    /// A point of the model input back in original-image pixels.
    pub fn to_original(&self, x: f64, y: f64) -> (f64, f64) {
        ((x - self.pad_x) / self.scale, (y - self.pad_y) / self.scale)
    }
    /// An original-image point in model-input pixels.
    pub fn to_input(&self, x: f64, y: f64) -> (f64, f64) {
        (x * self.scale + self.pad_x, y * self.scale + self.pad_y)
    }
}

/// Resize keeping the aspect ratio to fit `size`×`size`, pad with grey 114 centred
/// (ultralytics' `LetterBox(auto=False)`).
pub fn letterbox(img: RgbImage, size: u32) -> (RgbImage, Letterbox) {
    let (nw, nh, lb) = fit(img.dimensions(), size);
    let r = resize(img, nw, nh);
    let side = size as usize;
    let mut canvas =
        RgbImage::from_raw(size, size, vec![114; side * side * 3]).expect("size × size × 3 bytes");
    blit(
        &r,
        0,
        0,
        &mut canvas,
        lb.pad_x as u32,
        lb.pad_y as u32,
        nw,
        nh,
    );
    (canvas, lb)
}

/// [`letterbox`] and [`to_nchw`] in one: the resized image is written straight into the
/// tensor's planes, which start as the padding's value, so no `size`×`size` canvas is
/// allocated, filled and copied. The same values as the two steps, bit for bit.
pub fn letterbox_nchw(
    img: RgbImage,
    size: u32,
    mean: [f32; 3],
    std: [f32; 3],
) -> (ArrayD<f32>, Letterbox) {
    let (nw, nh, lb) = fit(img.dimensions(), size);
    let r = resize(img, nw, nh);
    let lut = levels(mean, std);
    let side = size as usize;
    let n = side * side;
    let (nw, nh, px, py) = (
        nw as usize,
        nh as usize,
        lb.pad_x as usize,
        lb.pad_y as usize,
    );
    // Each value written once, in order: a plane's top padding, then per row its left
    // padding, the image's values through the channel's table and its right padding, then
    // the bottom padding (filling the planes first and overwriting the image's part wrote
    // 1.6× the bytes).
    let mut v = Vec::with_capacity(3 * n);
    for (ch, l) in lut.iter().enumerate() {
        let pad = l[114];
        v.extend(std::iter::repeat_n(pad, py * side));
        for line in r.as_raw().chunks_exact(nw * 3) {
            v.extend(std::iter::repeat_n(pad, px));
            v.extend(line.chunks_exact(3).map(|p| l[p[ch] as usize]));
            v.extend(std::iter::repeat_n(pad, side - px - nw));
        }
        v.extend(std::iter::repeat_n(pad, (side - py - nh) * side));
    }
    let t = Array4::from_shape_vec((1, 3, side, side), v)
        .expect("3 planes of size × size")
        .into_dyn();
    (t, lb)
}

/// Where a `w`×`h` image goes in a `size`×`size` letterbox: its resized width and height,
/// and the mapping (scale, whole-pixel padding on the left and top).
fn fit((w, h): (u32, u32), size: u32) -> (u32, u32, Letterbox) {
    let scale = (size as f64 / w as f64).min(size as f64 / h as f64);
    let nw = ((w as f64 * scale).round() as u32).clamp(1, size);
    let nh = ((h as f64 * scale).round() as u32).clamp(1, size);
    let lb = Letterbox {
        scale,
        pad_x: ((size - nw) / 2) as f64,
        pad_y: ((size - nh) / 2) as f64,
        orig_w: w,
        orig_h: h,
    };
    (nw, nh, lb)
}

/// Each channel's 256 normalised values: (v / 255 − mean) / std.
fn levels(mean: [f32; 3], std: [f32; 3]) -> [[f32; 256]; 3] {
    std::array::from_fn(|c| std::array::from_fn(|v| (v as f32 / 255.0 - mean[c]) / std[c]))
}

/// RGB8 → float NCHW `[1, 3, H, W]`: (pixel / 255 − mean) / std per channel. Each channel's
/// 256 values are computed once (the same f32 operations, so the same bits) and the planes
/// are filled from the interleaved bytes in one pass: indexing the 4-D array per element
/// took ~10 ms of a 640×640 frame on this machine.
pub fn to_nchw(img: &RgbImage, mean: [f32; 3], std: [f32; 3]) -> ArrayD<f32> {
    let (w, h) = img.dimensions();
    let n = w as usize * h as usize;
    let lut = levels(mean, std);
    let mut v = vec![0f32; 3 * n];
    let (r, gb) = v.split_at_mut(n);
    let (g, b) = gb.split_at_mut(n);
    for (i, p) in img.as_raw().chunks_exact(3).enumerate() {
        r[i] = lut[0][p[0] as usize];
        g[i] = lut[1][p[1] as usize];
        b[i] = lut[2][p[2] as usize];
    }
    Array4::from_shape_vec((1, 3, h as usize, w as usize), v)
        .expect("3 planes of h × w")
        .into_dyn()
}

/// ImageNet normalisation (torchvision classifiers).
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];
/// YOLO: pixels / 255, no mean or std.
pub const UNIT_MEAN: [f32; 3] = [0.0; 3];
pub const UNIT_STD: [f32; 3] = [1.0; 3];

#[cfg(test)]
mod tests {
    use super::*;

    /// The resize is `image`'s triangle resize bit for bit: down, up, one axis only, to one
    /// pixel, from one pixel, on an image with every pixel different.
    #[test]
    fn resize_is_images_triangle_resize_bit_for_bit() {
        use image::imageops;
        let img = RgbImage::from_fn(97, 61, |x, y| {
            image::Rgb([
                (x * 37 + y * 11) as u8,
                (y * 51 + x * x) as u8,
                ((x ^ y) * 13 + 200) as u8,
            ])
        });
        for (w, h) in [
            (32, 20),
            (31, 61),
            (97, 17),
            (200, 130),
            (1, 1),
            (150, 9),
            (5, 300),
        ] {
            let want = imageops::resize(&img, w, h, imageops::FilterType::Triangle);
            let got = resize(img.clone(), w, h);
            assert_eq!(got.dimensions(), (w, h));
            assert!(got.as_raw() == want.as_raw(), "{w}×{h} differs");
        }
        // Halves round away from zero: 0.5, 1.5 and 2.5 levels give 1, 2 and 3.
        let pair = RgbImage::from_fn(2, 1, |x, _| image::Rgb([x as u8, 3 * x as u8, 5 * x as u8]));
        let want = imageops::resize(&pair, 1, 1, imageops::FilterType::Triangle);
        assert_eq!(want.as_raw(), &[1, 2, 3]);
        assert!(resize(pair, 1, 1).as_raw() == want.as_raw());
        let dot = RgbImage::from_pixel(1, 1, image::Rgb([9, 200, 77]));
        let want = imageops::resize(&dot, 7, 3, imageops::FilterType::Triangle);
        assert!(resize(dot, 7, 3).as_raw() == want.as_raw());
    }

    /// `acceval_resample` on noise (every value of every channel), RGB and RGBA, down and up,
    /// at sizes whose last pixels take its scalar way: `image`'s bytes.
    #[test]
    fn resample_on_noise_is_images_resize_rgb_and_rgba() {
        use image::imageops::{FilterType, resize as theirs};
        let mut seed = 0x2545_f491_u32;
        let mut noise = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    (seed >> 24) as u8
                })
                .collect()
        };
        let (w, h) = (193u32, 101u32);
        let rgb = RgbImage::from_raw(w, h, noise((w * h * 3) as usize)).unwrap();
        let rgba = image::RgbaImage::from_raw(w, h, noise((w * h * 4) as usize)).unwrap();
        for (nw, nh) in [(64, 34), (63, 33), (400, 211), (7, 3), (193, 50)] {
            let (uw, uh) = (nw as usize, nh as usize);
            let want = theirs(&rgb, nw, nh, FilterType::Triangle);
            let got = acceval_resample::triangle(rgb.as_raw(), 193, 101, 3, uw, uh);
            assert!(got == *want.as_raw(), "RGB {nw}×{nh} differs");
            let want = theirs(&rgba, nw, nh, FilterType::Triangle);
            let got = acceval_resample::triangle(rgba.as_raw(), 193, 101, 4, uw, uh);
            assert!(got == *want.as_raw(), "RGBA {nw}×{nh} differs");
        }
    }

    /// The fused letterbox gives the two steps' tensor bit for bit, wide and tall.
    #[test]
    fn fused_letterbox_is_letterbox_then_nchw() {
        for (w, h) in [(97, 61), (40, 130), (64, 64)] {
            let img = RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([(x * 7 + y) as u8, (y * 3) as u8, (x * y) as u8])
            });
            let (want, lw) = letterbox(img.clone(), 64);
            let want = to_nchw(&want, IMAGENET_MEAN, IMAGENET_STD);
            let (got, lg) = letterbox_nchw(img, 64, IMAGENET_MEAN, IMAGENET_STD);
            assert_eq!(lw, lg);
            assert_eq!(want.shape(), got.shape());
            let same = want
                .iter()
                .zip(got.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{w}×{h}");
        }
    }

    #[test]
    fn letterbox_round_trip() {
        // 1920×1080 into 640: scale 1/3, 640×360, padding 140 on top and bottom.
        let img = RgbImage::new(1920, 1080);
        let (out, lb) = letterbox(img, 640);
        assert_eq!(out.dimensions(), (640, 640));
        assert!((lb.scale - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!((lb.pad_x, lb.pad_y), (0.0, 140.0));
        // The padding is grey 114; the image area is what was resized (black here).
        assert_eq!(out.get_pixel(0, 0).0, [114, 114, 114]);
        assert_eq!(out.get_pixel(320, 320).0, [0, 0, 0]);
        for (x, y) in [(0.0, 0.0), (1919.0, 1079.0), (960.0, 540.0), (12.5, 700.25)] {
            let (ix, iy) = lb.to_input(x, y);
            let (ox, oy) = lb.to_original(ix, iy);
            assert!((ox - x).abs() < 1e-9 && (oy - y).abs() < 1e-9);
        }
        // The original's corners land on the letterbox's image area.
        assert_eq!(lb.to_input(0.0, 0.0), (0.0, 140.0));
        assert_eq!(lb.to_input(1920.0, 1080.0), (640.0, 500.0));
    }

    #[test]
    fn center_crop_sizes_and_normalisation() {
        let img = RgbImage::from_pixel(400, 300, image::Rgb([255, 128, 0]));
        let c = resize_center_crop(img, 256, 224);
        assert_eq!(c.dimensions(), (224, 224));
        let t = to_nchw(&c, IMAGENET_MEAN, IMAGENET_STD);
        assert_eq!(t.shape(), &[1, 3, 224, 224]);
        // (1.0 − 0.485) / 0.229 for red; (0 − 0.406) / 0.225 for blue.
        assert!((t[[0, 0, 10, 10]] - (1.0 - 0.485) / 0.229).abs() < 1e-5);
        assert!((t[[0, 2, 10, 10]] - (0.0 - 0.406) / 0.225).abs() < 1e-5);
    }

    #[test]
    fn nchw_planes_hold_each_pixel_bit_for_bit() {
        // Non-square, every pixel different: a swapped axis or plane would show.
        let img = RgbImage::from_fn(7, 5, |x, y| {
            image::Rgb([
                (x * 37 + y) as u8,
                (y * 51 + x * 3) as u8,
                (x * y * 11 + 200) as u8,
            ])
        });
        for (mean, std) in [(IMAGENET_MEAN, IMAGENET_STD), (UNIT_MEAN, UNIT_STD)] {
            let t = to_nchw(&img, mean, std);
            assert_eq!(t.shape(), &[1, 3, 5, 7]);
            for (x, y, p) in img.enumerate_pixels() {
                for c in 0..3 {
                    let want = (p[c] as f32 / 255.0 - mean[c]) / std[c];
                    assert_eq!(
                        t[[0, c, y as usize, x as usize]].to_bits(),
                        want.to_bits(),
                        "({x}, {y}) channel {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn grey_and_corrupt_images_are_refused() {
        let mut png = Vec::new();
        image::GrayImage::new(4, 4)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        assert!(matches!(
            decode_bytes(&png, "g.png"),
            Err(ImageError::Channels { channels: 1, .. })
        ));
        assert!(matches!(
            decode_bytes(b"\xff\xd8\xff garbage", "c.jpg"),
            Err(ImageError::Read { .. })
        ));
    }

    fn encoded(img: &RgbImage, fmt: image::ImageFormat) -> Vec<u8> {
        let mut b = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut b), fmt)
            .unwrap();
        b
    }

    #[test]
    fn truncated_images_are_refused_whole_ones_decode() {
        let img = RgbImage::from_fn(256, 200, |x, y| image::Rgb([x as u8, y as u8, 7]));
        for fmt in [image::ImageFormat::Jpeg, image::ImageFormat::Png] {
            let b = encoded(&img, fmt);
            assert_eq!(decode_bytes(&b, "whole").unwrap().dimensions(), (256, 200));
            for frac in [0.1, 0.5, 0.9, 0.999] {
                let n = (b.len() as f64 * frac) as usize;
                let e = match decode_bytes(&b[..n], "cut") {
                    Ok(_) => panic!("{fmt:?} cut at {n}/{} bytes decoded", b.len()),
                    Err(e) => e.to_string(),
                };
                assert!(
                    e.contains("truncated"),
                    "{fmt:?} cut at {n}/{}: {e}",
                    b.len()
                );
            }
        }
        // Bytes after the end-of-image marker (camera trailers) are harmless.
        let mut b = encoded(&img, image::ImageFormat::Jpeg);
        b.extend_from_slice(b"trailer");
        assert!(decode_bytes(&b, "trailer").is_ok());
    }

    #[test]
    fn strips_and_huge_images_are_refused_before_resizing() {
        let strip = encoded(&RgbImage::new(20_000, 1), image::ImageFormat::Png);
        let e = decode_bytes(&strip, "strip.png").err().unwrap().to_string();
        assert!(e.contains("20000×1") && e.contains("32:1"), "{e}");
        let wide = encoded(&RgbImage::new(MAX_SIDE + 1, 8), image::ImageFormat::Png);
        let e = decode_bytes(&wide, "wide.png").err().unwrap().to_string();
        assert!(e.contains("scale it down"), "{e}");
    }
}

//! Times the letterbox resize of the line-inspection frames: `image`'s triangle resize
//! against acceval-resample's, which gives the same bytes (checked here too).
//!
//! `cargo run --release --example resize_timing -- inputs/line-inspection/*.jpg`
//! (after `acceval inputs build line-inspection`); prints each side's median over 50 rounds.

use std::time::Instant;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: resize_timing IMAGE...");
        std::process::exit(2);
    }
    for f in files {
        let img = match image::open(&f) {
            Ok(i) => i.into_rgb8(),
            Err(e) => {
                eprintln!("{f}: {e}");
                std::process::exit(2);
            }
        };
        let (w, h) = img.dimensions();
        let s = (640.0 / w as f64).min(640.0 / h as f64);
        let (nw, nh) = ((w as f64 * s).round() as u32, (h as f64 * s).round() as u32);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut same = true;
        for _ in 0..50 {
            let t = Instant::now();
            let x = image::imageops::resize(&img, nw, nh, image::imageops::FilterType::Triangle);
            a.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let y = acceval_resample::triangle(
                img.as_raw(),
                w as usize,
                h as usize,
                3,
                nw as usize,
                nh as usize,
            );
            b.push(t.elapsed().as_secs_f64() * 1e3);
            same &= x.as_raw() == &y;
        }
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        println!(
            "{f}: {w}×{h} → {nw}×{nh}: image {:.3} ms, acceval-resample {:.3} ms (medians of 50); same bytes: {same}",
            a[25], b[25]
        );
    }
}

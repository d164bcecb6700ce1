//! chart.png: per workload, each variant's median as a ratio of plain's, drawn
//! as a bar from 1.0 (plain) to the ratio, with the budget marked.
//!
//! Text needs a TrueType font. plotters is built without fontconfig (its
//! `ab_glyph` backend only), so the harness loads a font file itself from
//! `--font` or a few Debian paths (fonts-dejavu-core); without one the chart
//! is drawn without text and the report says so.

use crate::report::Results;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

const FAMILY: &str = "sans-serif";

/// Registers a font for the chart; returns the file used, or None (draw without text).
pub fn load_font(explicit: Option<&Path>) -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(p) if p.as_os_str() == "none" => return None,
        Some(p) => vec![p.to_path_buf()],
        None => FONT_CANDIDATES.iter().map(PathBuf::from).collect(),
    };
    for path in candidates {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        // plotters keeps fonts for the life of the process: leak the bytes once.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        if plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).is_ok() {
            return Some(path);
        }
    }
    None
}

fn color(variant: &str, i: usize) -> RGBColor {
    match variant {
        "floor-c" => RGBColor(150, 150, 150),
        "floor-rust" => RGBColor(90, 110, 140),
        "guard" => RGBColor(214, 80, 40),
        _ => [
            RGBColor(40, 110, 200),
            RGBColor(40, 160, 80),
            RGBColor(150, 60, 170),
        ][i % 3],
    }
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

pub fn draw(results: &Results, path: &Path, text: bool) -> DrawResult {
    let variants: Vec<&str> = results
        .variants
        .iter()
        .map(|v| v.name.as_str())
        .filter(|n| *n != "plain")
        .collect();
    let rows = &results.workloads;
    let n = rows.len().max(1);
    let bar_h = 12u32;
    let row_h = (bar_h * variants.len().max(1) as u32 + 14).max(30);
    let height = 140 + row_h * n as u32;
    let width = 1200u32;

    // The axis covers the ratios up to CAP; a bar beyond it (the warm call
    // runs at several times plain's sub-µs cost) is cut at the edge and
    // labelled with its value, so that it does not flatten every other row.
    const CAP: f64 = 1.6;
    let mut lo: f64 = 0.95;
    let mut hi: f64 = 1.15;
    for w in rows {
        for r in &w.results {
            if let Some(x) = r.ratio_plain {
                lo = lo.min(x - 0.02).max(0.5);
                if x <= CAP {
                    hi = hi.max(x + 0.08);
                }
            }
        }
    }
    let hi = hi.min(CAP + 0.1);

    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let left = if text { 300 } else { 20 };
    let mut builder = ChartBuilder::on(&root);
    builder
        .margin(20)
        .margin_left(left)
        .x_label_area_size(if text { 40 } else { 0 });
    if text {
        let title = format!(
            "execguard: median {} as a ratio of plain (1.0 = no preload){}",
            match results.meta.metric {
                crate::run::Metric::Cpu => "CPU time",
                crate::run::Metric::Wall => "wall time",
            },
            if results.meta.quick {
                "  [quick smoke run: not figures]"
            } else {
                ""
            }
        );
        builder.caption(title, (FAMILY, 22));
    }
    // y runs top-down: row 0 at the top.
    let mut chart = builder.build_cartesian_2d(lo..hi, (n as f64)..0.0)?;
    let mut mesh = chart.configure_mesh();
    mesh.disable_y_mesh()
        .light_line_style(RGBColor(235, 235, 235));
    if text {
        mesh.x_desc("ratio vs plain (median of interleaved samples)")
            .x_label_formatter(&|x| format!("{x:.2}"))
            .label_style((FAMILY, 14))
            .axis_desc_style((FAMILY, 15))
            .y_labels(0);
    } else {
        mesh.x_labels(10).y_labels(0);
    }
    mesh.draw()?;

    // plain = 1.0
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(1.0, 0.0), (1.0, n as f64)],
        BLACK.stroke_width(2),
    )))?;

    let slot = bar_h as f64 / row_h as f64;
    for (vi, v) in variants.iter().enumerate() {
        let c = color(v, vi);
        let bars: Vec<Rectangle<(f64, f64)>> = rows
            .iter()
            .enumerate()
            .filter_map(|(wi, w)| {
                let r = w.results.iter().find(|r| r.variant == *v)?;
                let x = r.ratio_plain?;
                let y0 = wi as f64 + 7.0 / row_h as f64 + vi as f64 * slot;
                Some(Rectangle::new(
                    [(1.0, y0), (x.clamp(lo, hi), y0 + slot * 0.85)],
                    c.filled(),
                ))
            })
            .collect();
        let anno = chart.draw_series(bars)?;
        if text {
            anno.label(*v)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
    }

    // The budget, where it applies.
    for (wi, w) in rows.iter().enumerate() {
        let Some(limit) = crate::report::budget_of(&w.id) else {
            continue;
        };
        let y = wi as f64;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(limit, y + 0.05), (limit, y + 0.95)],
            RED.stroke_width(3),
        )))?;
    }

    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FAMILY, 14))
            .draw()?;
        let style =
            TextStyle::from((FAMILY, 14).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
        for (wi, w) in rows.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(lo, wi as f64 + 0.5));
            let label = match &w.skipped {
                Some(_) => format!("{} (skipped)", w.id),
                None if w.results.iter().any(|r| r.failed.is_some()) => {
                    format!("{} (a variant FAILED)", w.id)
                }
                None => w.id.clone(),
            };
            root.draw(&Text::new(label, (px - 8, py), style.clone()))?;
        }
        // Each bar's value at its end.
        let value_style =
            TextStyle::from((FAMILY, 11).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        for (vi, v) in variants.iter().enumerate() {
            for (wi, w) in rows.iter().enumerate() {
                let Some(x) = w
                    .results
                    .iter()
                    .find(|r| r.variant == *v)
                    .and_then(|r| r.ratio_plain)
                else {
                    continue;
                };
                let y = wi as f64 + 7.0 / row_h as f64 + (vi as f64 + 0.42) * slot;
                let (px, py) = chart.backend_coord(&(x.clamp(1.0, hi), y));
                let label = if x > hi {
                    format!("{x:.2}x (off scale)")
                } else {
                    format!("{x:.3}")
                };
                let (px, anchor) = if x > hi {
                    (px - 4, Pos::new(HPos::Right, VPos::Center))
                } else {
                    (px + 4, Pos::new(HPos::Left, VPos::Center))
                };
                let style = if x > hi {
                    value_style.clone().pos(anchor).color(&WHITE)
                } else {
                    value_style.clone()
                };
                root.draw(&Text::new(label, (px, py), style))?;
            }
        }
        let note = TextStyle::from((FAMILY, 13).into_font()).color(&RED);
        let ticks: Vec<String> = crate::report::PROCESS_BUDGETS
            .iter()
            .map(|(_, limit, what)| format!("{what} {limit:.2}x"))
            .collect();
        root.draw(&Text::new(
            format!("red tick: budget: {}", ticks.join(", ")),
            (left, height as i32 - 18),
            note,
        ))?;
    }
    root.present()?;
    Ok(())
}

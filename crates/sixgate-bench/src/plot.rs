//! `sixgate bench plot RESULT.json --out FILE.svg|FILE.png`: charts of a run —
//! throughput vs frame size (RFC 8219 §7.1), frame loss vs offered rate (§7.5)
//! and latency percentiles (§7.2–7.4) — one panel per measurement present.
//!
//! The charts are drawn once, as SVG; a PNG is that SVG rasterised (resvg),
//! with the system's fonts, so both formats show the same picture.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use resvg::{tiny_skia, usvg};
use serde_json::Value;

/// The chart file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Svg,
    Png,
}

impl Format {
    /// The format `out`'s extension names.
    pub fn of(out: &std::path::Path) -> Result<Format, String> {
        match out.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("svg") => Ok(Format::Svg),
            Some(e) if e.eq_ignore_ascii_case("png") => Ok(Format::Png),
            Some(other) => Err(format!(
                "{}: .{other} is not a chart format: write an .svg or a .png (or say --format)",
                out.display()
            )),
            None => Err(format!(
                "{}: give the file an .svg or .png extension, or say --format",
                out.display()
            )),
        }
    }
}

/// Chart width in pixels (SVG user units, and PNG pixels).
const WIDTH: u32 = 900;

/// Render the charts of the report in `json` to `out`, as `format` (default:
/// from the extension).
pub fn render(json: &str, out: &std::path::Path, format: Option<Format>) -> Result<(), String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("result JSON: {e}"))?;
    let format = match format {
        Some(f) => f,
        None => Format::of(out)?,
    };
    let svg = draw(&v)?;
    let bytes = match format {
        Format::Svg => svg.into_bytes(),
        Format::Png => png(&svg)?,
    };
    std::fs::write(out, bytes).map_err(|e| format!("{}: {e}", out.display()))
}

/// The charts of report `v`, as an SVG document.
pub fn draw(v: &Value) -> Result<String, String> {
    let panels = panels(v);
    if panels.is_empty() {
        return Err("the result has no throughput, frame loss or latency to plot".into());
    }
    let height = 360 * panels.len() as u32;
    let title = format!(
        "{} — {}",
        v["dut"].as_str().unwrap_or("?"),
        v["machine"]["model"].as_str().unwrap_or("")
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height + 40)).into_drawing_area();
        root.fill(&WHITE).map_err(text)?;
        let (top, body) = root.split_vertically(40);
        top.titled(&title, ("sans-serif", 20)).map_err(text)?;
        let areas = body.split_evenly((panels.len(), 1));
        for (panel, area) in panels.iter().zip(areas.iter()) {
            match panel {
                Panel::Throughput(points) => throughput(area, points)?,
                Panel::Loss(points) => loss(area, points)?,
                Panel::Latency(rows) => latency(area, rows)?,
            }
        }
        root.present().map_err(text)?;
    }
    Ok(svg)
}

/// Families tried, in order, for the charts' `sans-serif` text.
const SANS: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"];

/// The system's fonts, `sans-serif` set to one that is there; an error when
/// there is none at all (text would silently vanish from the PNG).
fn fonts() -> Result<usvg::fontdb::Database, String> {
    let mut db = usvg::fontdb::Database::new();
    db.load_system_fonts();
    let families: Vec<String> = db
        .faces()
        .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
        .collect();
    let sans = SANS
        .iter()
        .find(|want| families.iter().any(|f| f == *want))
        .map(|s| (*s).to_owned())
        .or_else(|| families.first().cloned())
        .ok_or(
            "PNG: no font found on this system for the charts' text (install one, e.g. \
             fonts-dejavu-core: scripts/setup.sh does), or write an .svg",
        )?;
    db.set_sans_serif_family(sans);
    Ok(db)
}

/// Rasterise `svg` (drawn by [`draw`]) to PNG bytes, at its own size.
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    let mut opt = usvg::Options::default();
    *opt.fontdb_mut() = fonts()?;
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| format!("PNG: the SVG: {e}"))?;
    // A text that no font could lay out is left out by usvg without a word:
    // say so instead of writing a chart without its labels.
    let wanted = texts_in_svg(svg);
    let laid_out = texts_in(tree.root());
    if laid_out < wanted {
        return Err(format!(
            "PNG: {} of {wanted} texts could not be laid out with the system's fonts (install e.g. fonts-dejavu-core: scripts/setup.sh does), or write an .svg",
            wanted - laid_out
        ));
    }
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| format!("PNG: a {size:?} image"))?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("PNG: {e}"))
}

/// `<text>` elements with something to show.
fn texts_in_svg(svg: &str) -> usize {
    svg.split("<text")
        .skip(1)
        .filter(|t| {
            t.split_once('>')
                .and_then(|(_, rest)| rest.split_once("</text>"))
                .is_some_and(|(content, _)| !content.trim().is_empty())
        })
        .count()
}

fn texts_in(group: &usvg::Group) -> usize {
    group
        .children()
        .iter()
        .map(|n| match n {
            usvg::Node::Text(_) => 1,
            usvg::Node::Group(g) => texts_in(g),
            _ => 0,
        })
        .sum()
}

fn text(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// One frame size of the throughput chart: (median, 1st, 99th percentile)
/// frames/s, or `None` when no trial at that size was valid (a gap).
type SizePoint = (f64, Option<(f64, f64, f64)>);

enum Panel {
    /// Per IPv6 frame size, its throughput or a gap.
    Throughput(Vec<SizePoint>),
    /// (rate, loss %) per frame size.
    Loss(Vec<(u64, Vec<(f64, f64)>)>),
    /// (label, min, typical, worst, max) microseconds.
    Latency(Vec<(String, f64, f64, f64, f64)>),
}

fn panels(v: &Value) -> Vec<Panel> {
    let mut out = Vec::new();
    let f = |x: &Value| x.as_f64().unwrap_or(0.0);
    if let Some(t) = v["throughput"].as_array() {
        let pts: Vec<SizePoint> = t
            .iter()
            .map(|r| {
                let fps = (r["fps"].is_object() && has_valid_trial(r)).then(|| {
                    (
                        f(&r["fps"]["median"]),
                        f(&r["fps"]["p1"]),
                        f(&r["fps"]["p99"]),
                    )
                });
                (f(&r["frame_size"]), fps)
            })
            .collect();
        if !pts.is_empty() {
            out.push(Panel::Throughput(pts));
        }
    }
    if let Some(l) = v["frame_loss"].as_array().filter(|a| !a.is_empty()) {
        let mut by_size: Vec<(u64, Vec<(f64, f64)>)> = Vec::new();
        for p in l {
            let size = p["frame_size"].as_u64().unwrap_or(0);
            let pt = (f(&p["rate"]), f(&p["loss_pct"]));
            match by_size.iter_mut().find(|(s, _)| *s == size) {
                Some((_, v)) => v.push(pt),
                None => by_size.push((size, vec![pt])),
            }
        }
        for (_, v) in &mut by_size {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        out.push(Panel::Loss(by_size));
    }
    if let Some(l) = v["latency"].as_array().filter(|a| !a.is_empty()) {
        let rows = l
            .iter()
            .filter(|r| r["tagged"].is_object())
            .map(|r| {
                let t = &r["tagged"];
                (
                    format!(
                        "{} B {}",
                        r["frame_size"],
                        if r["direction"].as_str() == Some("left-to-right") {
                            "L→R"
                        } else {
                            "R→L"
                        }
                    ),
                    f(&t["min_ns"]) / 1e3,
                    f(&t["typical_ns"]) / 1e3,
                    f(&t["worst_ns"]) / 1e3,
                    f(&t["max_ns"]) / 1e3,
                )
            })
            .collect::<Vec<_>>();
        if !rows.is_empty() {
            out.push(Panel::Latency(rows));
        }
    }
    out
}

/// Whether any trial of a throughput row was valid (the sender kept to its
/// schedule, RFC 8219 §5). Without one the rate found (0) measures the tester,
/// not the DUT: the chart leaves a gap there instead of a point at 0 frames/s.
/// A row without `searches` (an older result) is taken at its word.
fn has_valid_trial(row: &Value) -> bool {
    let Some(searches) = row["searches"].as_array() else {
        return true;
    };
    searches
        .iter()
        .filter_map(|s| s["steps"].as_array())
        .flatten()
        .any(|step| step["outcome"]["valid"].as_bool() != Some(false))
}

/// An axis tick for people: whole numbers, thousands as k and millions as M
/// (`35k`, `1.25M`), not `35000.0`.
fn tick(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e3 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 10.0 || v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.1}"))
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
/// A chart of [`throughput`], [`loss`] or [`latency`]: f64 on both axes.
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The series labels, in the same box on every chart.
fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Result<(), String> {
    legend_at(chart, SeriesLabelPosition::MiddleRight)
}

/// The series labels at `pos`.
fn legend_at<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    pos: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(text)
}

fn throughput(area: &Area<'_>, pts: &[SizePoint]) -> Result<(), String> {
    let measured: Vec<(f64, (f64, f64, f64))> =
        pts.iter().filter_map(|&(x, p)| Some((x, p?))).collect();
    let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max) * 1.05 + 10.0;
    let ymax = measured
        .iter()
        .map(|(_, p)| p.2.max(p.0))
        .fold(0.0, f64::max)
        * 1.15
        + 1.0;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Throughput (RFC 8219 §7.1), frames/s per direction",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc("IPv6 frame size, bytes (IPv4 = −20)")
        .y_desc("frames/s")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(text)?;
    // The median line runs between measured neighbours only: a frame size
    // without a valid trial breaks it.
    let runs = pts.split(|p| p.1.is_none()).filter(|r| !r.is_empty());
    for (i, run) in runs.enumerate() {
        let line = chart
            .draw_series(LineSeries::new(
                run.iter().filter_map(|&(x, p)| Some((x, p?.0))),
                &BLUE,
            ))
            .map_err(text)?;
        if i == 0 {
            line.label("median")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE));
        }
    }
    chart
        .draw_series(
            measured
                .iter()
                .map(|&(x, p)| Circle::new((x, p.0), 4, BLUE.filled())),
        )
        .map_err(text)?;
    chart
        .draw_series(
            measured
                .iter()
                .map(|&(x, p)| PathElement::new([(x, p.1), (x, p.2)], RED.stroke_width(2))),
        )
        .map_err(text)?
        .label("1st–99th percentile")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED));
    let gaps: Vec<f64> = pts.iter().filter(|p| p.1.is_none()).map(|p| p.0).collect();
    if !gaps.is_empty() {
        let grey = RGBColor(150, 150, 150);
        let style = ("sans-serif", 13)
            .into_font()
            .color(&grey)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(
                gaps.iter()
                    .map(|&x| PathElement::new([(x, 0.0), (x, ymax * 0.45)], grey.stroke_width(2))),
            )
            .map_err(text)?
            .label("no valid trial")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], grey.stroke_width(2)));
        chart
            .draw_series(
                gaps.iter()
                    .map(|&x| Text::new("no valid trial", (x, ymax * 0.47), style.clone())),
            )
            .map_err(text)?;
    }
    // Throughput falls with frame size: the lower right is where no point is.
    legend_at(&mut chart, SeriesLabelPosition::LowerRight)
}

fn loss(area: &Area<'_>, series: &[(u64, Vec<(f64, f64)>)]) -> Result<(), String> {
    let xmax = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        * 1.05
        + 1.0;
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption("Frame loss rate (RFC 8219 §7.5)", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc("offered frames/s per direction")
        .y_desc("loss, %")
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(text)?;
    for (i, (size, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color))
            .map_err(text)?
            .label(format!("{size} B"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .map_err(text)?;
    }
    legend(&mut chart)
}

fn latency(area: &Area<'_>, rows: &[(String, f64, f64, f64, f64)]) -> Result<(), String> {
    let n = rows.len();
    let ymax = rows.iter().map(|r| r.4.max(r.3)).fold(0.0, f64::max) * 1.15 + 1.0;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Latency (RFC 8219 §7.2): min, typical (median), worst case (99.9th), max — µs",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..ymax)
        .map_err(text)?;
    let labels: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    chart
        .configure_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("µs")
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(text)?;
    for (i, r) in rows.iter().enumerate() {
        let x = i as f64;
        chart
            .draw_series([
                PathElement::new([(x, r.1), (x, r.4)], BLACK.stroke_width(1)),
                PathElement::new([(x - 0.2, r.2), (x + 0.2, r.2)], BLUE.stroke_width(3)),
                PathElement::new([(x - 0.2, r.3), (x + 0.2, r.3)], RED.stroke_width(3)),
            ])
            .map_err(text)?;
    }
    // The bars carry no labels: an empty series per colour names them.
    for (label, color) in [
        ("typical (median)", BLUE),
        ("worst case (99.9th percentile)", RED),
    ] {
        chart
            .draw_series(std::iter::once(PathElement::new(
                [(0.0, 0.0), (0.0, 0.0)],
                color,
            )))
            .map_err(text)?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
    }
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESULT: &str = r#"{
        "dut": "test", "machine": {"model": "cpu"},
        "throughput": [
            {"frame_size": 84, "fps": {"median": 250000, "p1": 240000, "p99": 260000, "count": 3}},
            {"frame_size": 1518, "fps": {"median": 200000, "p1": 190000, "p99": 210000, "count": 3}}
        ],
        "frame_loss": [
            {"frame_size": 84, "rate": 300000, "loss_pct": 12.5},
            {"frame_size": 84, "rate": 270000, "loss_pct": 3.0},
            {"frame_size": 84, "rate": 240000, "loss_pct": 0.0}
        ],
        "latency": [
            {"frame_size": 84, "direction": "left-to-right",
             "tagged": {"min_ns": 5000, "typical_ns": 9000, "worst_ns": 40000, "max_ns": 60000}}
        ]
    }"#;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sgb-plot-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn renders_every_panel_to_svg() {
        let dir = scratch("svg");
        let out = dir.join("r.svg");
        render(RESULT, &out, None).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(
            svg.contains("Throughput") && svg.contains("Frame loss") && svg.contains("Latency")
        );
        let err = render(RESULT, &dir.join("r.gif"), None).unwrap_err();
        assert!(err.contains(".gif") && err.contains(".png"), "{err}");
        assert!(render("{}", &out, None).unwrap_err().contains("to plot"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 20: ticks are whole numbers with k and M, never `35000.0`.
    #[test]
    fn ticks_read_like_numbers() {
        let cases = [
            (0.0, "0"),
            (84.0, "84"),
            (35_000.0, "35k"),
            (250_000.0, "250k"),
            (1_500.0, "1.5k"),
            (1_000_000.0, "1M"),
            (1_250_000.0, "1.25M"),
            (2.5, "2.5"),
            (12.0, "12"),
        ];
        for (v, want) in cases {
            assert_eq!(tick(v), want, "{v}");
        }
    }

    /// Issue 20: a frame size whose trials were all invalid is a gap marked
    /// "no valid trial", not a point at 0 frames/s the line runs down to.
    #[test]
    fn a_size_without_a_valid_trial_is_a_marked_gap() {
        let step = |valid: bool| serde_json::json!({"rate": 1000, "outcome": {"sent": 1, "received": 1, "valid": valid}});
        let row = |size: u64, median: u64, valid: bool| {
            serde_json::json!({
                "frame_size": size,
                "fps": {"median": median, "p1": median, "p99": median, "count": 1},
                "searches": [{"rate": median, "steps": [step(valid)]}]
            })
        };
        let v = serde_json::json!({
            "dut": "t", "machine": {"model": "m"},
            "throughput": [row(84, 350_000, true), row(512, 0, false), row(1518, 200_000, true)]
        });
        let Panel::Throughput(pts) = &panels(&v)[0] else {
            panic!("no throughput panel")
        };
        assert_eq!(pts[1], (512.0, None));
        assert_eq!(pts[0].1.map(|p| p.0), Some(350_000.0));
        let svg = draw(&v).unwrap();
        assert!(svg.contains("no valid trial"), "{svg}");
        assert!(!svg.contains("350000.0") && svg.contains("350k"), "ticks");
        // A valid trial that found 0 frames/s is a measurement: drawn.
        let v = serde_json::json!({"throughput": [row(84, 0, true)]});
        let Panel::Throughput(pts) = &panels(&v)[0] else {
            panic!()
        };
        assert_eq!(pts[0], (84.0, Some((0.0, 0.0, 0.0))));
    }

    /// The PNG is the SVG rasterised: a valid PNG (signature, IHDR first) of
    /// the SVG's size, by extension or by --format, with its text laid out.
    #[test]
    fn renders_a_png_of_the_svg_size() {
        let dir = scratch("png");
        // One rendering (rasterising is slow in a debug build): --format
        // overrides the extension, which would otherwise decide.
        let forced = dir.join("r.chart");
        render(RESULT, &forced, Some(Format::Png)).unwrap();
        assert_eq!(Format::of(&dir.join("r.PNG")), Ok(Format::Png));
        assert_eq!(Format::of(&dir.join("r.svg")), Ok(Format::Svg));
        let b = std::fs::read(&forced).unwrap();
        assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
        assert_eq!(&b[12..16], b"IHDR");
        let w = u32::from_be_bytes(b[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(b[20..24].try_into().unwrap());
        // Three panels of 360 px under a 40 px title.
        assert_eq!((w, h), (WIDTH, 3 * 360 + 40));
        let svg = draw(&serde_json::from_str(RESULT).unwrap()).unwrap();
        assert!(texts_in_svg(&svg) > 10, "titles, axis labels, legends");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

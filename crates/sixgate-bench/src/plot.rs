//! `sixgate bench plot RESULT.json --out FILE.svg`: charts of a run —
//! throughput vs frame size (RFC 8219 §7.1), frame loss vs offered rate (§7.5)
//! and latency percentiles (§7.2–7.4) — one panel per measurement present.

use plotters::prelude::*;
use serde_json::Value;

/// Render the charts of the report in `json` to the SVG file `out`.
pub fn render(json: &str, out: &std::path::Path) -> Result<(), String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("result JSON: {e}"))?;
    match out.extension().and_then(|e| e.to_str()) {
        Some("svg") => {}
        Some(other) => {
            return Err(format!(
                "{}: .{other} is not supported; write an .svg (convert it to PNG with e.g. rsvg-convert)",
                out.display()
            ));
        }
        None => {
            return Err(format!(
                "{}: give the file an .svg extension",
                out.display()
            ));
        }
    }
    let panels = panels(&v);
    if panels.is_empty() {
        return Err("the result has no throughput, frame loss or latency to plot".into());
    }
    let height = 360 * panels.len() as u32;
    let title = format!(
        "{} — {}",
        v["dut"].as_str().unwrap_or("?"),
        v["machine"]["model"].as_str().unwrap_or("")
    );
    let root = SVGBackend::new(out, (900, height + 40)).into_drawing_area();
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
    Ok(())
}

fn text(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

enum Panel {
    /// (IPv6 frame size, median, 1st, 99th percentile) frames/s.
    Throughput(Vec<(f64, f64, f64, f64)>),
    /// (rate, loss %) per frame size.
    Loss(Vec<(u64, Vec<(f64, f64)>)>),
    /// (label, min, typical, worst, max) microseconds.
    Latency(Vec<(String, f64, f64, f64, f64)>),
}

fn panels(v: &Value) -> Vec<Panel> {
    let mut out = Vec::new();
    let f = |x: &Value| x.as_f64().unwrap_or(0.0);
    if let Some(t) = v["throughput"].as_array() {
        let pts: Vec<_> = t
            .iter()
            .filter(|r| r["fps"].is_object())
            .map(|r| {
                (
                    f(&r["frame_size"]),
                    f(&r["fps"]["median"]),
                    f(&r["fps"]["p1"]),
                    f(&r["fps"]["p99"]),
                )
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

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn throughput(area: &Area<'_>, pts: &[(f64, f64, f64, f64)]) -> Result<(), String> {
    let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max) * 1.05 + 10.0;
    let ymax = pts.iter().map(|p| p.3.max(p.1)).fold(0.0, f64::max) * 1.15 + 1.0;
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
        .draw()
        .map_err(text)?;
    chart
        .draw_series(LineSeries::new(pts.iter().map(|p| (p.0, p.1)), &BLUE))
        .map_err(text)?
        .label("median")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE));
    chart
        .draw_series(
            pts.iter()
                .map(|p| Circle::new((p.0, p.1), 4, BLUE.filled())),
        )
        .map_err(text)?;
    chart
        .draw_series(
            pts.iter()
                .map(|p| PathElement::new([(p.0, p.2), (p.0, p.3)], RED.stroke_width(2))),
        )
        .map_err(text)?
        .label("1st–99th percentile")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(text)?;
    Ok(())
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
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(text)?;
    Ok(())
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
    chart
        .draw_series(std::iter::once(PathElement::new(
            [(0.0, 0.0), (0.0, 0.0)],
            BLUE,
        )))
        .map_err(text)?
        .label("typical (median)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE));
    chart
        .draw_series(std::iter::once(PathElement::new(
            [(0.0, 0.0), (0.0, 0.0)],
            RED,
        )))
        .map_err(text)?
        .label("worst case (99.9th percentile)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_panel_to_svg() {
        let json = r#"{
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
        let dir = std::env::temp_dir().join(format!("sgb-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.svg");
        render(json, &out).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(
            svg.contains("Throughput") && svg.contains("Frame loss") && svg.contains("Latency")
        );
        assert!(
            render(json, &dir.join("r.png"))
                .unwrap_err()
                .contains(".png")
        );
        assert!(render("{}", &out).unwrap_err().contains("nothing") || render("{}", &out).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

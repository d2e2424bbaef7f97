//! The lab's charts: grouped bar charts written as SVG (plotters' SVG backend, which needs no
//! fonts), so that `extentdb examples` shows each seed's phenomenon as a picture beside its
//! tables: a group per setting the seed varies (data files, log growth), a bar per series
//! (a SQL Server version's rules), and each bar's value printed above it.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One group of bars: its label on the x axis and one value per series.
pub struct BarGroup {
    pub label: String,
    pub values: Vec<f64>,
}

/// A grouped bar chart: `series` names the bars of every group, in order.
pub struct BarChart<'a> {
    pub title: &'a str,
    pub y_desc: &'a str,
    pub series: Vec<String>,
    pub groups: Vec<BarGroup>,
}

/// Colours of the series, in order (the first is used for a chart of one series).
const SERIES_COLOURS: [RGBColor; 4] =
    [RGBColor(31, 119, 180), RGBColor(255, 127, 14), RGBColor(44, 160, 44), RGBColor(214, 39, 40)];

/// Of each group's width, the part its bars take (the rest is the gap between groups).
const GROUP_FILL: f64 = 0.8;

impl BarChart<'_> {
    /// Writes the chart to `path` (SVG, 800 x 480).
    pub fn write_svg(&self, path: &Path) -> Result<(), String> {
        assert!(self.series.len() <= SERIES_COLOURS.len(), "at most four series");
        assert!(self.groups.iter().all(|g| g.values.len() == self.series.len()));
        self.draw(path).map_err(|e| format!("chart {}: {e}", path.display()))
    }

    fn draw(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let highest = self.groups.iter().flat_map(|g| g.values.iter().copied()).fold(0.0, f64::max);
        // Room above the highest bar for its value and the legend.
        let y_max = if highest > 0.0 { highest * 1.3 } else { 1.0 };
        let groups = self.groups.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(self.title, ("sans-serif", 20))
            .margin(20)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..groups - 0.5, 0.0..y_max)?;
        let labels: Vec<String> = self.groups.iter().map(|g| g.label.clone()).collect();
        let group_label = move |x: &f64| {
            let index = x.round();
            let on_tick = (x - index).abs() < 1e-6 && index >= 0.0;
            labels.get(index as usize).filter(|_| on_tick).cloned().unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(self.groups.len())
            .x_label_formatter(&group_label)
            .y_desc(self.y_desc)
            .draw()?;
        let width = GROUP_FILL / self.series.len() as f64;
        for (series_no, name) in self.series.iter().enumerate() {
            let colour = SERIES_COLOURS[series_no];
            let bars = self.groups.iter().enumerate().map(move |(group_no, group)| {
                let left = group_no as f64 - GROUP_FILL / 2.0 + width * series_no as f64;
                let value = group.values[series_no];
                Rectangle::new([(left, 0.0), (left + width, value)], colour.filled())
            });
            let drawn = chart.draw_series(bars)?;
            if self.series.len() > 1 {
                drawn.label(name.clone()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled())
                });
            }
            let above = TextStyle::from(("sans-serif", 13).into_font())
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            let values = self.groups.iter().enumerate().map(move |(group_no, group)| {
                let left = group_no as f64 - GROUP_FILL / 2.0 + width * series_no as f64;
                let value = group.values[series_no];
                Text::new(shown(value), (left + width / 2.0, value), above.clone())
            });
            chart.draw_series(values)?;
        }
        if self.series.len() > 1 {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .border_style(BLACK)
                .background_style(WHITE)
                .draw()?;
        }
        root.present()?;
        Ok(())
    }
}

/// A bar's value as printed above it: whole numbers without decimals, small ones with two.
fn shown(value: f64) -> String {
    if value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grouped_chart_has_a_bar_per_value_its_labels_and_its_legend() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        let chart = BarChart {
            title: "VLFs after growth",
            y_desc: "VLFs",
            series: vec!["2019".into(), "2022".into()],
            groups: vec![
                BarGroup { label: "64 MB".into(), values: vec![20.0, 3.0] },
                BarGroup { label: "1 GB".into(), values: vec![12.0, 9.0] },
            ],
        };
        chart.write_svg(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        for text in ["VLFs after growth", "64 MB", "1 GB", "2019", "2022", "\n20\n", "\n3\n"] {
            assert!(svg.contains(text), "{text} missing from {svg}");
        }
        // Four bars in the series' colours, and two legend swatches.
        assert_eq!(svg.matches("fill=\"#1F77B4\"").count(), 3, "{svg}");
        assert_eq!(svg.matches("fill=\"#FF7F0E\"").count(), 3, "{svg}");
    }

    #[test]
    fn values_are_shown_whole_or_with_two_decimals() {
        assert_eq!(shown(378735.4), "378735");
        assert_eq!(shown(12.0), "12");
        assert_eq!(shown(0.72), "0.72");
    }
}

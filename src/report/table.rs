//! Tables rendered as Markdown and CSV from the same cells.

/// A table: a header row and rows of already-formatted cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with the given column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }

    /// GitHub-flavoured Markdown.
    pub fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = format!(
            "| {} |\n",
            self.header
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        out.push_str(&format!("|{}\n", "---|".repeat(self.header.len())));
        for row in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }

    /// RFC 4180 CSV.
    pub fn csv(&self) -> String {
        let field = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let line =
            |cells: &[String]| cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",") + "\n";
        let mut out = line(&self.header);
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    /// Fixed-width text, right-aligned (what `run` prints).
    pub fn text(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0usize; cols];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            // Padded by hand: `format!`'s width is limited to u16::MAX and
            // panics past it (a 70 KB key is a valid cell).
            let mut line = String::new();
            for (i, c) in row.iter().enumerate() {
                let w = width.get(i).copied().unwrap_or(0) + 2;
                let pad = w.saturating_sub(c.chars().count());
                line.extend(std::iter::repeat(' ').take(pad));
                line.push_str(c);
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_markdown_csv_and_text() {
        let mut t = Table::new(["a", "b"]);
        t.push(["1", "x,y"]);
        assert_eq!(t.markdown(), "| a | b |\n|---|---|\n| 1 | x,y |\n");
        assert_eq!(t.csv(), "a,b\n1,\"x,y\"\n");
        assert_eq!(t.text(), "  a    b\n  1  x,y\n");
    }

    #[test]
    fn a_cell_wider_than_u16_is_padded_not_a_panic() {
        let long = "k".repeat(70_000);
        let mut t = Table::new(["key", "n"]);
        t.push([long.as_str(), "1"]);
        t.push(["a", "22"]);
        let text = t.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[2].ends_with(" a  22"));
        assert_eq!(lines[1].chars().count(), lines[2].chars().count());
    }
}

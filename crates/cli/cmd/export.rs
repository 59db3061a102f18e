//! `--xlsx FILE` and `--csv-dir DIR`: a command's tables as one workbook (a sheet each) and
//! as one CSV file each (`DIR/NAME.csv`).

use anyhow::Context;
use barrage_report::Sheet;
use std::path::Path;

/// Writes `sheets` where the flags ask for them.
pub fn export(sheets: &[Sheet], xlsx: Option<&Path>, csv_dir: Option<&Path>) -> anyhow::Result<()> {
    if let Some(path) = xlsx {
        barrage_report::write_xlsx(path, sheets)?;
    }
    if let Some(dir) = csv_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("--csv-dir {}", dir.display()))?;
        for sheet in sheets {
            let path = dir.join(format!("{}.csv", sheet.name));
            std::fs::write(&path, barrage_report::to_csv(sheet))
                .with_context(|| format!("--csv-dir {}", path.display()))?;
        }
    }
    Ok(())
}

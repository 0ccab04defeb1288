"""The spreadsheets app: real XLSX and ODS files with formulas, recalculated by LibreOffice or in Python."""

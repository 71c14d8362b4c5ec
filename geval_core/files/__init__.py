"""Files the workbench reads and writes: prompt exports, other tools' exports, judgment files, data rows."""

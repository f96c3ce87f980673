"""Reports over finished result tables: advisor findings, row grades, xlsx colours, HTML."""

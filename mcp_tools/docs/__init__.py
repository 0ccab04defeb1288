"""The documents app: folders, sharing, and real ODT/DOCX text documents (read, create, append, replace, comment)."""

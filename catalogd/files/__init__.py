"""File metadata for opted-in tables: listing partition directories in parallel
(``listing``) and attaching ``THdfsFileDesc`` lists to loaded objects (``metadata``)."""

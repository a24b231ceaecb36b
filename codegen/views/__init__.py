"""Views of decoded records, defined once and run by the command line and by Spark."""

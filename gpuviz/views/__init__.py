"""One QWidget per figure, grouped by lesson."""

"""Shared helpers for the Streamlit pages: state (library, judge), plotly charts, safe display."""

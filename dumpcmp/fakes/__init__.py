"""fakes"""

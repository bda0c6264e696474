"""nesttom"""

# Parses scripts with PowerShell's own parser and reports what a quoting check needs: the parse
# errors, the number of top-level statements, and for each top-level `$Name = ...` the string
# constants on its right-hand side (kind and UTF-16 code units) and how many syntax nodes it has.
# One process serves many batches: each line on standard input is a JSON array of scripts, each
# the base64 of its UTF-16LE text, and each answer is one JSON line. Texts travel as UTF-16 code
# units and values come back as code units because ConvertFrom-Json and UTF-8 would replace a lone
# surrogate with U+FFFD, and the check is of the exact characters.
$ErrorActionPreference = 'Stop'
# A failure of the checker itself reaches the test's stderr as plain text.
$PSStyle.OutputRendering = 'PlainText'
$reader = [System.IO.StreamReader]::new([Console]::OpenStandardInput(), [System.Text.UTF8Encoding]::new($false))
$writer = [System.IO.StreamWriter]::new([Console]::OpenStandardOutput(), [System.Text.UTF8Encoding]::new($false))

function Get-CodeUnits([string]$text) { , ([int[]][char[]]$text) }

while ($null -ne ($line = $reader.ReadLine())) {
  $answers = foreach ($encoded in ($line | ConvertFrom-Json)) {
    $bytes = [Convert]::FromBase64String($encoded)
    $chars = [char[]]::new($bytes.Length / 2)
    [Buffer]::BlockCopy($bytes, 0, $chars, 0, $bytes.Length)
    $text = [string]::new($chars)
    $tokens = $null
    $errors = $null
    $ast = [System.Management.Automation.Language.Parser]::ParseInput($text, [ref]$tokens, [ref]$errors)
    $statements = @($ast.EndBlock.Statements)
    $assignments = foreach ($statement in $statements) {
      if ($statement -isnot [System.Management.Automation.Language.AssignmentStatementAst]) { continue }
      if ($statement.Left -isnot [System.Management.Automation.Language.VariableExpressionAst]) { continue }
      $right = $statement.Right
      $strings = foreach ($s in $right.FindAll({ param($a) $a -is [System.Management.Automation.Language.StringConstantExpressionAst] }, $true)) {
        [pscustomobject]@{ kind = [string]$s.StringConstantType; codes = (Get-CodeUnits $s.Value) }
      }
      [pscustomobject]@{
        name = $statement.Left.VariablePath.UserPath
        strings = @($strings)
        nodes = @($right.FindAll({ $true }, $true)).Count
      }
    }
    [pscustomobject]@{
      errors = @($errors | ForEach-Object { '{0} at {1}:{2}' -f $_.ErrorId, $_.Extent.StartLineNumber, $_.Extent.StartColumnNumber })
      statements = $statements.Count
      assignments = @($assignments)
    }
  }
  $writer.WriteLine((ConvertTo-Json -InputObject @($answers) -Compress -Depth 8 -EscapeHandling EscapeNonAscii))
  $writer.Flush()
}

# Every Windows action machineadm generates, run by PowerShell with the Windows-only cmdlets as
# Pester mocks of the declarations in windows-cmdlets.ps1 (so their real parameter names and types
# bind), and the native tools (sc.exe, shutdown.exe, djoin.exe, containerd) as executables on PATH
# that record their argument vector. Each test checks what the cmdlets received, the JSON line the
# script prints and how it fails. test/windows/powershell-pester.test.ts writes the scripts (from
# src/host/windows/scripts.ts) and runs this file.
param(
  [Parameter(Mandatory = $true)] [string]$ScriptsPath,
  [Parameter(Mandatory = $true)] [string]$StubsPath,
  [Parameter(Mandatory = $true)] [string]$NativeRecord
)

Describe 'Windows actions' {
BeforeAll {
  . $StubsPath
  $script:Scripts = Get-Content -LiteralPath $ScriptsPath -Raw | ConvertFrom-Json -AsHashtable

  # The action's script as powershell.exe runs it: its output lines, the last one the JSON result.
  function Invoke-Action([string]$Key, [string]$Stdin) {
    if (-not $script:Scripts.ContainsKey($Key)) { throw "no script $Key" }
    $block = [scriptblock]::Create($script:Scripts[$Key])
    if ($PSBoundParameters.ContainsKey('Stdin')) { $out = @($Stdin | & $block) } else { $out = @(& $block) }
    $out | Should -HaveCount 1 -Because 'a script prints exactly one line, its JSON result'
    $out[0] | Should -BeOfType [string]
    return $out[0]
  }
  function Invoke-ActionJson([string]$Key, [string]$Stdin) {
    $line = if ($PSBoundParameters.ContainsKey('Stdin')) { Invoke-Action $Key $Stdin } else { Invoke-Action $Key }
    return $line | ConvertFrom-Json -AsHashtable
  }
  # What the native tools were run with, one argument vector per call.
  function Get-NativeCalls {
    if (-not (Test-Path -LiteralPath $NativeRecord)) { return @() }
    $calls = [System.Collections.Generic.List[object]]::new()
    foreach ($line in Get-Content -LiteralPath $NativeRecord) { $calls.Add([string[]]($line | ConvertFrom-Json)) }
    return , $calls
  }
  # A service as Get-Service returns it: Status, and WaitForStatus recording what it waited for.
  function New-FakeService([string]$Name, [string]$Status) {
    $service = [pscustomobject]@{ Name = $Name; Status = $Status; Waited = [System.Collections.Generic.List[string]]::new() }
    $service | Add-Member -MemberType ScriptMethod -Name WaitForStatus -Value { param($status, $timeout) $this.Waited.Add("$status $([timespan]$timeout)") }
    return $service
  }
}

BeforeEach {
  Remove-Item -LiteralPath $NativeRecord -Force -ErrorAction SilentlyContinue
  $env:NATIVE_EXIT = '0'
  $env:NATIVE_STDERR = ''
}

Describe 'declared cmdlets' {
  It 'a misspelled parameter fails to bind, as on Windows (the check can fail)' {
    { New-NetFirewallRule -Name x -DisplayNmae x } | Should -Throw -ExpectedMessage "*parameter name 'DisplayNmae'*"
  }
  It 'a value outside an enum fails to bind' {
    { New-NetFirewallRule -Name x -DisplayName x -Enabled Yes } | Should -Throw -ExpectedMessage '*Enabled*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Enable-WindowsOptionalFeature without -Online or -Path' {
    { Enable-WindowsOptionalFeature -FeatureName Containers -All -NoRestart } | Should -Throw -ExpectedMessage '*missing mandatory parameters: Online*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: New-NetFirewallRule -Enabled with a bool, not the enum' {
    { New-NetFirewallRule -Name x -DisplayName x -Enabled $true } | Should -Throw -ExpectedMessage '*Enabled*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: New-Service -SecurityDescriptorSddl, which came with PowerShell 6' {
    { New-Service -Name x -BinaryPathName 'C:\x.exe' -SecurityDescriptorSddl 'D:P' } | Should -Throw -ExpectedMessage "*parameter name 'SecurityDescriptorSddl'*"
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: New-Service -StartupType AutomaticDelayedStart' {
    { New-Service -Name x -BinaryPathName 'C:\x.exe' -StartupType AutomaticDelayedStart } | Should -Throw -ExpectedMessage '*StartupType*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: New-Service -Path, an alias of -BinaryPathName that came with PowerShell 6.1' {
    { New-Service -Name x -Path 'C:\x.exe' } | Should -Throw -ExpectedMessage "*parameter name 'Path'*"
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Install-WindowsFeature -Vhd with -Restart' {
    { Install-WindowsFeature -Name Containers -Vhd 'C:\x.vhdx' -Restart } | Should -Throw -ExpectedMessage '*Parameter set cannot be resolved*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Get-CimInstance -Query with -Filter' {
    { Get-CimInstance -Query 'SELECT * FROM Win32_Service' -Filter "Name = 'kubelet'" } | Should -Throw -ExpectedMessage '*Parameter set cannot be resolved*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Invoke-CimMethod -InputObject with -Namespace' {
    { Invoke-CimMethod -InputObject ([pscustomobject]@{ Name = 'kubelet' }) -MethodName Change -Namespace root/cimv2 } | Should -Throw -ExpectedMessage '*Parameter set cannot be resolved*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Get-Acl -LP, an alias of -LiteralPath that came with PowerShell 7.5' {
    { Get-Acl -LP 'C:\k' } | Should -Throw -ExpectedMessage "*parameter name 'LP'*"
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Set-Acl -LP, an alias of -LiteralPath that came with PowerShell 7.5' {
    { Set-Acl -LP 'C:\k' -AclObject ([pscustomobject]@{}) } | Should -Throw -ExpectedMessage "*parameter name 'LP'*"
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Set-Acl -InputObject with -ClearCentralAccessPolicy' {
    { Set-Acl -InputObject ([pscustomobject]@{}) -AclObject ([pscustomobject]@{}) -ClearCentralAccessPolicy } | Should -Throw -ExpectedMessage '*Parameter set cannot be resolved*'
  }
  It 'a call Windows PowerShell 5.1 refuses fails to bind: Remove-NetFirewallRule -InputObject with -PolicyStore' {
    { Remove-NetFirewallRule -InputObject ([pscustomobject]@{ Name = 'machineadm-kubelet' }) -PolicyStore PersistentStore } | Should -Throw -ExpectedMessage '*Parameter set cannot be resolved*'
  }
  It 'an unstubbed call fails rather than succeeding quietly' {
    { Get-Service } | Should -Throw -ExpectedMessage 'Get-Service is not stubbed in this test'
  }
}

Describe 'feature.query' {
  It 'feature.query on a server reads Get-WindowsFeature by name: installed, pending, available, absent' {
    Mock Get-WindowsFeature { [pscustomobject]@{ Name = 'Containers'; Installed = $true; InstallState = 'Installed' } }
    (Invoke-ActionJson 'feature.query').state | Should -Be 'installed'
    Should -Invoke Get-WindowsFeature -Exactly -Times 1 -ParameterFilter { "$Name" -eq 'Containers' -and $Name.Count -eq 1 }
    Mock Get-WindowsFeature { [pscustomobject]@{ Installed = $false; InstallState = 'InstallPending' } }
    (Invoke-ActionJson 'feature.query').state | Should -Be 'pending'
    Mock Get-WindowsFeature { [pscustomobject]@{ Installed = $false; InstallState = 'Available' } }
    (Invoke-ActionJson 'feature.query').state | Should -Be 'available'
    Mock Get-WindowsFeature { }
    (Invoke-ActionJson 'feature.query').state | Should -Be 'absent'
  }
  It 'feature.query on a client (no ServerManager) reads Get-WindowsOptionalFeature -Online' {
    Remove-Item -LiteralPath Function:\Get-WindowsFeature
    try {
      Mock Get-WindowsOptionalFeature { [pscustomobject]@{ FeatureName = 'Containers'; State = 'EnablePending' } }
      (Invoke-ActionJson 'feature.query').state | Should -Be 'pending'
      Should -Invoke Get-WindowsOptionalFeature -Exactly -Times 1 -ParameterFilter { $Online -and $FeatureName -eq 'Containers' }
      Mock Get-WindowsOptionalFeature { [pscustomobject]@{ State = 'Enabled' } }
      (Invoke-ActionJson 'feature.query').state | Should -Be 'installed'
      Mock Get-WindowsOptionalFeature { [pscustomobject]@{ State = 'Disabled' } }
      (Invoke-ActionJson 'feature.query').state | Should -Be 'available'
    } finally {
      . $StubsPath
    }
  }
}

Describe 'feature.install' {
  It 'feature.install reports no restart when Install-WindowsFeature says RestartNeeded No' {
    Mock Install-WindowsFeature { [pscustomobject]@{ Success = $true; RestartNeeded = 'No'; ExitCode = 'NoChangeNeeded' } }
    (Invoke-ActionJson 'feature.install').restartNeeded | Should -BeFalse
    Should -Invoke Install-WindowsFeature -Exactly -Times 1 -ParameterFilter { "$Name" -eq 'Containers' -and -not $Restart }
  }
  It 'feature.install throws with the exit code when Install-WindowsFeature fails' {
    Mock Install-WindowsFeature { [pscustomobject]@{ Success = $false; RestartNeeded = 'No'; ExitCode = 'Failed' } }
    { Invoke-Action 'feature.install' } | Should -Throw -ExpectedMessage 'Install-WindowsFeature did not succeed: exit code Failed'
  }
}

Describe 'service.query' {
  It 'service.query prints null for a service that does not exist' {
    Mock Get-CimInstance { @([pscustomobject]@{ Name = 'kubelet2' }) } -ParameterFilter { $ClassName -eq 'Win32_Service' }
    Invoke-Action 'service.query' | Should -Be 'null'
  }
  It 'service.query matches the name exactly and prints its display name, command line, start mode, state and dependencies' {
    Mock Get-CimInstance {
      @([pscustomobject]@{ Name = 'kubelet2'; DisplayName = 'wrong'; PathName = 'wrong'; StartMode = 'Manual'; State = 'Stopped' },
        [pscustomobject]@{ Name = 'kubelet'; DisplayName = 'Kubernetes kubelet'; PathName = 'C:\k\kubelet.exe --windows-service'; StartMode = 'Auto'; State = 'Running' })
    } -ParameterFilter { $ClassName -eq 'Win32_Service' }
    Mock Get-Service { @([pscustomobject]@{ Name = 'kubelet'; ServicesDependedOn = @([pscustomobject]@{ Name = 'containerd' }, [pscustomobject]@{ Name = 'csi-proxy' }) }, [pscustomobject]@{ Name = 'kubelet2'; ServicesDependedOn = @() }) }
    $out = Invoke-ActionJson 'service.query'
    $out.name | Should -Be 'kubelet'
    $out.displayName | Should -Be 'Kubernetes kubelet'
    $out.commandLine | Should -Be 'C:\k\kubelet.exe --windows-service'
    $out.startMode | Should -Be 'Auto'
    $out.state | Should -Be 'Running'
    $out.dependsOn | Should -Be @('containerd', 'csi-proxy')
    Should -Invoke Get-Service -ParameterFilter { $PSBoundParameters.Count -eq 0 }
  }
}

Describe 'service.create' {
  It 'service.create registers an automatic service with its dependencies and sets restart on failure with sc.exe' {
    Mock New-Service { }
    Invoke-Action 'service.create' | Should -Be '{}'
    Should -Invoke New-Service -Exactly -Times 1 -ParameterFilter {
      $Name -eq 'kubelet' -and $DisplayName -eq 'Kubernetes kubelet' -and $BinaryPathName -eq '"C:\k\kube let.exe" --windows-service --node-labels=a=O’’Brien' -and
      $StartupType -eq 'Automatic' -and ($DependsOn -join ',') -eq 'containerd,csi-proxy'
    }
    $calls = Get-NativeCalls
    $calls | Should -HaveCount 2
    $calls[0] | Should -Be @('sc.exe', 'failure', 'kubelet', 'reset=', '86400', 'actions=', 'restart/10000/restart/10000/restart/10000')
    $calls[1] | Should -Be @('sc.exe', 'failureflag', 'kubelet', '1')
  }
  It 'service.create without dependencies leaves -DependsOn out' {
    Mock New-Service { }
    Invoke-Action 'service.create.nodeps' | Should -Be '{}'
    Should -Invoke New-Service -Exactly -Times 1 -ParameterFilter { -not $PSBoundParameters.ContainsKey('DependsOn') }
  }
  It 'service.create throws when sc.exe fails' {
    Mock New-Service { }
    # 1060 (the service does not exist) on Windows; exit codes here end at 255.
    $env:NATIVE_EXIT = '5'
    { Invoke-Action 'service.create' } | Should -Throw -ExpectedMessage 'sc.exe failure exited with code 5'
  }
}

Describe 'service.configure' {
  It 'service.configure calls Win32_Service.Change with the display name, command line, automatic start and dependencies' {
    $service = [pscustomobject]@{ Name = 'kubelet' }
    Mock Get-CimInstance { @($service) } -ParameterFilter { $ClassName -eq 'Win32_Service' }
    Mock Invoke-CimMethod { [pscustomobject]@{ ReturnValue = 0 } }
    Invoke-Action 'service.configure' | Should -Be '{}'
    Should -Invoke Invoke-CimMethod -Exactly -Times 1 -ParameterFilter {
      $InputObject.Name -eq 'kubelet' -and $MethodName -eq 'Change' -and $Arguments.DisplayName -eq 'Kubernetes kubelet' -and $Arguments.PathName -eq 'C:\k\kubelet.exe --v=2' -and
      $Arguments.StartMode -eq 'Automatic' -and $Arguments.ServiceDependencies -is [string[]] -and ($Arguments.ServiceDependencies -join ',') -eq 'containerd'
    }
    (Get-NativeCalls) | Should -HaveCount 2
  }
  It 'service.configure throws with Change''s return value when it is not 0' {
    Mock Get-CimInstance { @([pscustomobject]@{ Name = 'kubelet' }) } -ParameterFilter { $ClassName -eq 'Win32_Service' }
    Mock Invoke-CimMethod { [pscustomobject]@{ ReturnValue = 21 } }
    { Invoke-Action 'service.configure' } | Should -Throw -ExpectedMessage 'Win32_Service.Change returned 21'
  }
  It 'service.configure throws for a service that does not exist' {
    Mock Get-CimInstance { @() } -ParameterFilter { $ClassName -eq 'Win32_Service' }
    { Invoke-Action 'service.configure' } | Should -Throw -ExpectedMessage 'no service named kubelet'
  }
}

Describe 'service.start, service.stop, service.restart' {
  It 'service.start starts a stopped service through the pipeline and waits for Running' {
    $service = New-FakeService 'kubelet' 'Stopped'
    Mock Get-Service { @($service, (New-FakeService 'kubelet2' 'Stopped')) }
    Mock Start-Service { }
    Invoke-Action 'service.start' | Should -Be '{}'
    Should -Invoke Start-Service -Exactly -Times 1 -ParameterFilter { $InputObject.Name -eq 'kubelet' }
    $service.Waited | Should -Be @('Running 00:01:00')
  }
  It 'service.start only waits for a running service, and throws for a missing one' {
    $service = New-FakeService 'kubelet' 'Running'
    Mock Get-Service { @($service) }
    Mock Start-Service { }
    Invoke-Action 'service.start' | Should -Be '{}'
    Should -Invoke Start-Service -Exactly -Times 0
    Mock Get-Service { @() }
    { Invoke-Action 'service.start' } | Should -Throw -ExpectedMessage 'no service named kubelet'
  }
  It '<Action> runs <Cmdlet> -Force on the running service and waits for <Status>' -ForEach @(
    @{ Action = 'service.stop'; Cmdlet = 'Stop-Service'; Status = 'Stopped' }
    @{ Action = 'service.restart'; Cmdlet = 'Restart-Service'; Status = 'Running' }
  ) {
    $service = New-FakeService 'kubelet' 'Running'
    Mock Get-Service { @($service) }
    Mock -CommandName $Cmdlet -MockWith { }
    Invoke-Action $Action | Should -Be '{}'
    Should -Invoke -CommandName $Cmdlet -Exactly -Times 1 -ParameterFilter { $Force -and $InputObject.Name -eq 'kubelet' }
    $service.Waited | Should -Be @("$Status 00:01:00")
  }
  It 'service.stop leaves a service that does not exist alone' {
    Mock Get-Service { @() }
    Mock Stop-Service { }
    Invoke-Action 'service.stop' | Should -Be '{}'
    Should -Invoke Stop-Service -Exactly -Times 0
  }
}

Describe 'firewall.query, firewall.add' {
  It 'firewall.query prints null for a missing rule, looked up by -Name without failing' {
    Mock Get-NetFirewallRule { }
    Invoke-Action 'firewall.query' | Should -Be 'null'
    Should -Invoke Get-NetFirewallRule -Exactly -Times 1 -ParameterFilter { "$Name" -eq 'machineadm-kubelet' }
  }
  It 'firewall.query reads the cmdlet''s not-found error as a missing rule, and fails on any other error' {
    Mock Get-NetFirewallRule { Write-Error -Message "No MSFT_NetFirewallRule objects found with property 'Name' equal to 'machineadm-kubelet'" -Category ObjectNotFound }
    Invoke-Action 'firewall.query' | Should -Be 'null'
    Mock Get-NetFirewallRule { Write-Error -Message 'Access is denied.' -Category PermissionDenied }
    { Invoke-Action 'firewall.query' } | Should -Throw -ExpectedMessage 'Access is denied.'
    { Invoke-Action 'firewall.add' } | Should -Throw -ExpectedMessage 'Access is denied.'
  }
  It 'firewall.query prints the rule with its port filter' {
    $rule = [pscustomobject]@{ Name = 'machineadm-kubelet'; Enabled = 'True'; Direction = 'Inbound'; Action = 'Allow' }
    Mock Get-NetFirewallRule { $rule }
    Mock Get-NetFirewallPortFilter { [pscustomobject]@{ Protocol = 'TCP'; LocalPort = '10250' } }
    $out = Invoke-ActionJson 'firewall.query'
    $out | Should -BeOfType [hashtable]
    ($out.Keys | Sort-Object) -join ',' | Should -Be 'action,direction,enabled,localPort,name,protocol'
    "$($out.name) $($out.enabled) $($out.direction) $($out.action) $($out.protocol) $($out.localPort)" | Should -Be 'machineadm-kubelet True Inbound Allow TCP 10250'
    Should -Invoke Get-NetFirewallPortFilter -Exactly -Times 1 -ParameterFilter { $AssociatedNetFirewallRule.Name -eq 'machineadm-kubelet' }
  }
  It 'firewall.add replaces a rule of the same name with an enabled inbound allow rule for the port' {
    Mock Get-NetFirewallRule { [pscustomobject]@{ Name = 'machineadm-kubelet' } }
    Mock Remove-NetFirewallRule { }
    Mock New-NetFirewallRule { }
    Invoke-Action 'firewall.add' | Should -Be '{}'
    Should -Invoke Remove-NetFirewallRule -Exactly -Times 1 -ParameterFilter { "$Name" -eq 'machineadm-kubelet' }
    Should -Invoke New-NetFirewallRule -Exactly -Times 1 -ParameterFilter {
      $Name -eq 'machineadm-kubelet' -and $DisplayName -eq 'kubelet (machineadm)' -and $Enabled -eq 'True' -and $Direction -eq 'Inbound' -and
      $Protocol -eq 'TCP' -and $Action -eq 'Allow' -and "$LocalPort" -eq '10250'
    }
    Mock Get-NetFirewallRule { }
    Invoke-Action 'firewall.add' | Should -Be '{}'
    Should -Invoke Remove-NetFirewallRule -Exactly -Times 1
  }
}

Describe 'acl.private-directory, acl.query' {
  It 'acl.private-directory creates the directory and sets a protected DACL for SYSTEM and Administrators, owner Administrators' {
    $log = [System.Collections.Generic.List[string]]::new()
    Mock New-Object -ParameterFilter { $TypeName -eq 'System.Security.AccessControl.DirectorySecurity' } {
      $acl = [pscustomobject]@{ Kind = 'DirectorySecurity' }
      $acl | Add-Member ScriptMethod SetAccessRuleProtection { param($protect, $keep) $log.Add("protect $protect $keep") }
      $acl | Add-Member ScriptMethod AddAccessRule { param($rule) $log.Add("rule $($rule -join ' | ')") }
      $acl | Add-Member ScriptMethod SetOwner { param($sid) $log.Add("owner $sid") }
      $acl
    }
    Mock New-Object -ParameterFilter { $TypeName -eq 'System.Security.Principal.SecurityIdentifier' } { "sid:$($ArgumentList -join ',')" }
    Mock New-Object -ParameterFilter { $TypeName -eq 'System.Security.AccessControl.FileSystemAccessRule' } { , ([string[]]$ArgumentList) }
    Mock Set-Acl { }
    $path = $script:Scripts['acl.path']
    Invoke-Action 'acl.private-directory' | Should -Be '{}'
    Test-Path -LiteralPath $path -PathType Container | Should -BeTrue
    $log | Should -Be @(
      'protect True False',
      'rule sid:S-1-5-18 | FullControl | ContainerInherit, ObjectInherit | None | Allow',
      'rule sid:S-1-5-32-544 | FullControl | ContainerInherit, ObjectInherit | None | Allow',
      'owner sid:S-1-5-32-544'
    )
    Should -Invoke Set-Acl -Exactly -Times 1 -ParameterFilter { "$LiteralPath" -eq $path -and $AclObject.Kind -eq 'DirectorySecurity' }
    # Empty: nothing to reset.
    (Get-NativeCalls) | Should -HaveCount 0
  }
  It 'acl.private-directory resets what the directory already holds to inherit it, and throws when icacls fails' {
    Mock New-Object -ParameterFilter { $TypeName -eq 'System.Security.AccessControl.DirectorySecurity' } {
      $acl = [pscustomobject]@{ Kind = 'DirectorySecurity' }
      foreach ($method in 'SetAccessRuleProtection', 'AddAccessRule', 'SetOwner') { $acl | Add-Member ScriptMethod $method { } }
      $acl
    }
    Mock New-Object -ParameterFilter { $TypeName -in 'System.Security.Principal.SecurityIdentifier', 'System.Security.AccessControl.FileSystemAccessRule' } { 'stand-in' }
    Mock Set-Acl { }
    $path = $script:Scripts['acl.path']
    New-Item -ItemType Directory -Force -Path $path | Out-Null
    Set-Content -LiteralPath (Join-Path $path 'kubeadm-flags.env') -Value 'KUBELET_KUBEADM_ARGS=""'
    try {
      Invoke-Action 'acl.private-directory' | Should -Be '{}'
      $calls = Get-NativeCalls
      $calls | Should -HaveCount 1
      $calls[0] | Should -Be @('icacls.exe', (Join-Path $path '*'), '/reset', '/T', '/C', '/Q')
      $env:NATIVE_EXIT = '5'
      { Invoke-Action 'acl.private-directory' } | Should -Throw -ExpectedMessage 'icacls /reset exited with code 5'
    } finally {
      Remove-Item -LiteralPath (Join-Path $path 'kubeadm-flags.env')
    }
  }
  It 'acl.query prints null for a missing path, and the protection and entries (as SIDs) of an existing one' {
    Mock Get-Acl {
      $entry = { param($sid) $identity = [pscustomobject]@{ Sid = $sid }; $identity | Add-Member ScriptMethod Translate { param($type) [pscustomobject]@{ Value = $this.Sid } }; $identity }
      [pscustomobject]@{ AreAccessRulesProtected = $true; Sddl = 'O:BAG:SYD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)'; Access = @(
        [pscustomobject]@{ IdentityReference = (& $entry 'S-1-5-18'); FileSystemRights = 'FullControl'; AccessControlType = 'Allow'; IsInherited = $false },
        [pscustomobject]@{ IdentityReference = (& $entry 'S-1-5-32-544'); FileSystemRights = 'FullControl'; AccessControlType = 'Allow'; IsInherited = $true }) }
    }
    Invoke-Action 'acl.query.missing' | Should -Be 'null'
    Should -Invoke Get-Acl -Exactly -Times 0
    New-Item -ItemType Directory -Force -Path $script:Scripts['acl.path'] | Out-Null
    $out = Invoke-ActionJson 'acl.query'
    $out.protected | Should -BeTrue
    $out.entries | Should -HaveCount 2
    "$($out.entries[0].sid) $($out.entries[0].rights) $($out.entries[0].type) $($out.entries[0].inherited)" | Should -Be 'S-1-5-18 FullControl Allow False'
    "$($out.entries[1].sid) $($out.entries[1].inherited)" | Should -Be 'S-1-5-32-544 True'
    $out.sddl | Should -BeExactly 'O:BAG:SYD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)'
    Should -Invoke Get-Acl -Exactly -Times 1 -ParameterFilter { "$LiteralPath" -eq $script:Scripts['acl.path'] }
  }
}

Describe 'acl.restore' {
  It 'acl.restore gives the folder the access rules of the recorded SDDL, the DACL only, through Set-Acl' {
    $log = [System.Collections.Generic.List[string]]::new()
    Mock Get-Acl {
      $acl = [pscustomobject]@{ Kind = 'DirectorySecurity' }
      $acl | Add-Member ScriptMethod SetSecurityDescriptorSddlForm { param($sddl, $sections) $log.Add("$sddl | $sections | $($sections.GetType().Name)") }
      $acl
    }
    Mock Set-Acl { }
    Invoke-Action 'acl.restore' | Should -Be '{}'
    Should -Invoke Get-Acl -Exactly -Times 1 -ParameterFilter { "$LiteralPath" -eq 'C:\k' }
    $log | Should -Be @('O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;ID;0x1301bf;;;AU) | Access | AccessControlSections')
    Should -Invoke Set-Acl -Exactly -Times 1 -ParameterFilter { "$LiteralPath" -eq 'C:\k' -and $AclObject.Kind -eq 'DirectorySecurity' }
  }
  It 'acl.restore fails when Set-Acl fails' {
    Mock Get-Acl { $acl = [pscustomobject]@{}; $acl | Add-Member ScriptMethod SetSecurityDescriptorSddlForm { }; $acl }
    Mock Set-Acl { throw 'Attempted to perform an unauthorized operation.' }
    { Invoke-Action 'acl.restore' } | Should -Throw -ExpectedMessage 'Attempted to perform an unauthorized operation.'
  }
}

Describe 'computer-system, boot-identity' {
  It 'computer-system prints PartOfDomain, Domain and Name from Win32_ComputerSystem' {
    Mock Get-CimInstance { [pscustomobject]@{ PartOfDomain = $true; Domain = 'corp.example'; Name = 'NODE-01' } } -ParameterFilter { $ClassName -eq 'Win32_ComputerSystem' }
    Invoke-Action 'computer-system' | Should -Be '{"partOfDomain":true,"domain":"corp.example","name":"NODE-01"}'
  }
  It 'boot-identity prints BootId, LastBootUpTime in UTC and the build; BootId null when the registry has none' {
    Mock Get-CimInstance { [pscustomobject]@{ LastBootUpTime = [datetime]::new(2026, 12, 1, 8, 30, 0, [DateTimeKind]::Utc); BuildNumber = '20348' } } -ParameterFilter { $ClassName -eq 'Win32_OperatingSystem' }
    Mock Get-ItemProperty { [pscustomobject]@{ BootId = 42 } } -ParameterFilter { $LiteralPath -eq 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management\PrefetchParameters' -and $Name -eq 'BootId' }
    Invoke-Action 'boot-identity' | Should -Be '{"bootId":"42","lastBootUpTime":"2026-12-01T08:30:00.0000000Z","build":"20348"}'
    Mock Get-ItemProperty { } -ParameterFilter { $Name -eq 'BootId' }
    (Invoke-ActionJson 'boot-identity').bootId | Should -BeNullOrEmpty
  }
}

Describe 'resume.register, resume.query, resume.remove' {
  It 'resume.register registers the task from a definition: SYSTEM and Administrators only (its SDDL), run as S-1-5-18 at startup, the command and nothing else' {
    $seen = [System.Collections.Generic.List[string]]::new()
    Mock Register-ScheduledTask { $seen.Add($Xml) }
    Invoke-Action 'resume.register' | Should -Be '{}'
    Should -Invoke Register-ScheduledTask -Exactly -Times 1 -ParameterFilter {
      $TaskName -eq 'resume' -and $TaskPath -eq '\machineadm\' -and $Force -and $Xml -and
      -not ($PSBoundParameters.Keys | Where-Object { $_ -in 'Action', 'Trigger', 'Principal', 'Settings', 'Description', 'User', 'Password' })
    }
    [xml]$task = $seen[0]
    $ns = New-Object System.Xml.XmlNamespaceManager($task.NameTable)
    $ns.AddNamespace('t', 'http://schemas.microsoft.com/windows/2004/02/mit/task')
    $one = { param($path) $nodes = @($task.SelectNodes($path, $ns)); $nodes | Should -HaveCount 1 -Because $path; $nodes[0] }
    (& $one '/t:Task/t:RegistrationInfo/t:SecurityDescriptor').InnerText | Should -BeExactly 'D:P(A;;FA;;;SY)(A;;FA;;;BA)'
    (& $one '/t:Task/t:Principals/t:Principal/t:UserId').InnerText | Should -BeExactly 'S-1-5-18'
    (& $one '/t:Task/t:Principals/t:Principal/t:RunLevel').InnerText | Should -BeExactly 'HighestAvailable'
    $principal = & $one '/t:Task/t:Principals/t:Principal'
    (& $one '/t:Task/t:Actions').GetAttribute('Context') | Should -BeExactly $principal.GetAttribute('id')
    @($task.SelectNodes('/t:Task/t:Triggers/*', $ns)).LocalName | Should -Be @('BootTrigger')
    (& $one '/t:Task/t:Triggers/t:BootTrigger/t:Enabled').InnerText | Should -BeExactly 'true'
    @($task.SelectNodes('/t:Task/t:Actions/*', $ns)).LocalName | Should -Be @('Exec')
    (& $one '/t:Task/t:Actions/t:Exec/t:Command').InnerText | Should -BeExactly 'C:\Program Files\machineadm\machineadm.exe'
    (& $one '/t:Task/t:Actions/t:Exec/t:Arguments').InnerText | Should -BeExactly 'resume --state-dir C:\ProgramData\machineadm --root C:\'
    (& $one '/t:Task/t:RegistrationInfo/t:Description').InnerText | Should -BeExactly $script:Scripts['resume.description']
    (& $one '/t:Task/t:Settings/t:MultipleInstancesPolicy').InnerText | Should -BeExactly 'IgnoreNew'
    (& $one '/t:Task/t:Settings/t:ExecutionTimeLimit').InnerText | Should -BeExactly 'PT4H'
    # Every value the definition holds is one of these: no source URL, token or password can ride along.
    $constant = @('D:P(A;;FA;;;SY)(A;;FA;;;BA)', 'true', 'S-1-5-18', 'HighestAvailable', 'IgnoreNew', 'false', 'PT4H')
    $given = @('C:\Program Files\machineadm\machineadm.exe', 'resume --state-dir C:\ProgramData\machineadm --root C:\', $script:Scripts['resume.description'])
    @($task.SelectNodes('//text()') | ForEach-Object { $_.Value } | Where-Object { $_.Trim() -ne '' -and $_ -notin ($constant + $given) }) | Should -BeNullOrEmpty
    ($seen[0] -replace [regex]::Escape('http://schemas.microsoft.com/windows/2004/02/mit/task'), '') | Should -Not -Match 'https?://|token|password|sig='
  }
  It 'resume.register keeps markup in a value as text: the definition''s shape does not change' {
    $seen = [System.Collections.Generic.List[string]]::new()
    Mock Register-ScheduledTask { $seen.Add($Xml) }
    Invoke-Action 'resume.register.markup' | Should -Be '{}'
    [xml]$task = $seen[0]
    $ns = New-Object System.Xml.XmlNamespaceManager($task.NameTable)
    $ns.AddNamespace('t', 'http://schemas.microsoft.com/windows/2004/02/mit/task')
    $task.SelectSingleNode('/t:Task/t:Actions/t:Exec/t:Arguments', $ns).InnerText | Should -BeExactly $script:Scripts['resume.markup']
    @($task.SelectNodes('/t:Task/t:Actions/t:Exec', $ns)) | Should -HaveCount 1
    $task.SelectSingleNode('/t:Task/t:RegistrationInfo/t:SecurityDescriptor', $ns).InnerText | Should -BeExactly 'D:P(A;;FA;;;SY)(A;;FA;;;BA)'
  }
  It 'resume.register fails when Register-ScheduledTask fails' {
    Mock Register-ScheduledTask { throw 'Access is denied.' }
    { Invoke-Action 'resume.register' } | Should -Throw -ExpectedMessage 'Access is denied.'
  }
  It 'resume.query prints null without the task, and the task''s description with it' {
    Mock Get-ScheduledTask { }
    Invoke-Action 'resume.query' | Should -Be 'null'
    Mock Get-ScheduledTask { [pscustomobject]@{ TaskName = 'resume'; Description = '["a","b"]' } }
    (Invoke-ActionJson 'resume.query').description | Should -Be '["a","b"]'
    Should -Invoke Get-ScheduledTask -ParameterFilter { "$TaskName" -eq 'resume' -and "$TaskPath" -eq '\machineadm\' }
  }
  It 'resume.query and resume.remove read the not-found error as no task, and fail on any other error' {
    Mock Get-ScheduledTask { Write-Error -Message "No MSFT_ScheduledTask objects found with property 'TaskName' equal to 'resume'" -Category ObjectNotFound }
    Mock Unregister-ScheduledTask { }
    Invoke-Action 'resume.query' | Should -Be 'null'
    Invoke-Action 'resume.remove' | Should -Be '{}'
    Should -Invoke Unregister-ScheduledTask -Exactly -Times 0
    Mock Get-ScheduledTask { Write-Error -Message 'The Task Scheduler service is not running.' -Category ResourceUnavailable }
    { Invoke-Action 'resume.query' } | Should -Throw -ExpectedMessage 'The Task Scheduler service is not running.'
    { Invoke-Action 'resume.remove' } | Should -Throw -ExpectedMessage 'The Task Scheduler service is not running.'
  }
  It 'resume.remove unregisters the task without asking, and does nothing when it is gone' {
    Mock Get-ScheduledTask { [pscustomobject]@{ TaskName = 'resume' } }
    Mock Unregister-ScheduledTask { }
    Invoke-Action 'resume.remove' | Should -Be '{}'
    Should -Invoke Unregister-ScheduledTask -Exactly -Times 1 -ParameterFilter { "$TaskName" -eq 'resume' -and "$TaskPath" -eq '\machineadm\' }
    Mock Get-ScheduledTask { }
    Invoke-Action 'resume.remove' | Should -Be '{}'
    Should -Invoke Unregister-ScheduledTask -Exactly -Times 1
  }
}

Describe 'service.remove, firewall.remove' {
  It 'service.remove stops a running service, waits for Stopped, then deletes it with sc.exe' {
    $service = New-FakeService 'kubelet' 'Running'
    Mock Get-Service { @($service, (New-FakeService 'kubelet2' 'Running')) }
    Mock Stop-Service { }
    Invoke-Action 'service.remove' | Should -Be '{}'
    Should -Invoke Stop-Service -Exactly -Times 1 -ParameterFilter { $Force -and $InputObject.Name -eq 'kubelet' }
    $service.Waited | Should -Be @('Stopped 00:01:00')
    $calls = Get-NativeCalls
    $calls | Should -HaveCount 1
    $calls[0] | Should -Be @('sc.exe', 'delete', 'kubelet')
  }
  It 'service.remove deletes a stopped service without stopping it, and does nothing for a missing one' {
    Mock Get-Service { @(New-FakeService 'kubelet' 'Stopped') }
    Mock Stop-Service { }
    Invoke-Action 'service.remove' | Should -Be '{}'
    Should -Invoke Stop-Service -Exactly -Times 0
    (Get-NativeCalls) | Should -HaveCount 1
    Remove-Item -LiteralPath $NativeRecord -Force
    Mock Get-Service { @(New-FakeService 'kubelet2' 'Running') }
    Invoke-Action 'service.remove' | Should -Be '{}'
    (Get-NativeCalls) | Should -HaveCount 0
  }
  It 'service.remove throws with the exit code of sc.exe delete' {
    Mock Get-Service { @(New-FakeService 'kubelet' 'Stopped') }
    $env:NATIVE_EXIT = '5'
    { Invoke-Action 'service.remove' } | Should -Throw -ExpectedMessage 'sc.exe delete exited with code 5'
  }
  It 'firewall.remove removes the rule by name, does nothing without it, and fails on an error other than not found' {
    Mock Get-NetFirewallRule { [pscustomobject]@{ Name = 'machineadm-kubelet' } }
    Mock Remove-NetFirewallRule { }
    Invoke-Action 'firewall.remove' | Should -Be '{}'
    Should -Invoke Remove-NetFirewallRule -Exactly -Times 1 -ParameterFilter { "$Name" -eq 'machineadm-kubelet' -and $Name.Count -eq 1 }
    Mock Get-NetFirewallRule { Write-Error -Message "No MSFT_NetFirewallRule objects found with property 'Name' equal to 'machineadm-kubelet'" -Category ObjectNotFound }
    Invoke-Action 'firewall.remove' | Should -Be '{}'
    Should -Invoke Remove-NetFirewallRule -Exactly -Times 1
    Mock Get-NetFirewallRule { Write-Error -Message 'Access is denied.' -Category PermissionDenied }
    { Invoke-Action 'firewall.remove' } | Should -Throw -ExpectedMessage 'Access is denied.'
  }
}

Describe 'domain.leave, domain.leave-local' {
  It 'domain.leave reads the password from the pipeline and gives Remove-Computer the credential, the workgroup and -Force, without -Restart' {
    Mock Test-ComputerSecureChannel { $true }
    Mock Remove-Computer { }
    $hex = [Convert]::ToHexString([System.Text.Encoding]::UTF8.GetBytes('pä’’ss $(x)'))
    Invoke-Action 'domain.leave' "$hex" | Should -Be '{"left":true,"reachable":true}'
    Should -Invoke Test-ComputerSecureChannel -Exactly -Times 1 -ParameterFilter { $Server -eq 'dc1.corp.example' -and -not $Repair }
    Should -Invoke Remove-Computer -Exactly -Times 1 -ParameterFilter {
      $UnjoinDomainCredential.UserName -eq 'CORP\k8s-joiner' -and $UnjoinDomainCredential.GetNetworkCredential().Password -eq 'pä’’ss $(x)' -and
      $WorkgroupName -eq 'WORKGROUP' -and $Force -and -not $Restart -and -not $PSBoundParameters.ContainsKey('ComputerName')
    }
  }
  It 'domain.leave changes nothing and says so when no domain controller answers' {
    Mock Test-ComputerSecureChannel { Write-Error -Message 'Cannot verify the secure channel: the domain controller could not be contacted.' -Category ConnectionError }
    Mock Remove-Computer { }
    $out = Invoke-ActionJson 'domain.leave' '41'
    $out.left | Should -BeFalse
    $out.reachable | Should -BeFalse
    $out.message | Should -BeLike '*could not be contacted*'
    Should -Invoke Remove-Computer -Exactly -Times 0
    Mock Test-ComputerSecureChannel { $false }
    (Invoke-ActionJson 'domain.leave' '41').reachable | Should -BeFalse
    Should -Invoke Remove-Computer -Exactly -Times 0
  }
  It 'domain.leave reports Remove-Computer''s error id and the Win32 code found in its message' {
    Mock Test-ComputerSecureChannel { $true }
    Mock Remove-Computer {
      $text = (New-Object System.ComponentModel.Win32Exception(5)).Message
      $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new([InvalidOperationException]::new("Failed to unjoin computer 'NODE-01' from domain 'corp.example' with the following error message: $text"), 'FailToUnjoinDomain,Microsoft.PowerShell.Commands.RemoveComputerCommand', 'OperationStopped', 'NODE-01'))
    }
    $out = Invoke-ActionJson 'domain.leave' '41'
    $out.left | Should -BeFalse
    $out.code | Should -Be 5
    $out.errorId | Should -BeLike 'FailToUnjoinDomain*'
  }
  It 'domain.leave fails without a password on standard input' {
    { Invoke-Action 'domain.leave' '' } | Should -Throw -ExpectedMessage 'domain.leave: no password on standard input'
  }
  It 'domain.leave-local unjoins with no account and no options, then joins the workgroup' {
    $system = [pscustomobject]@{ PartOfDomain = $true; Domain = 'corp.example'; Name = 'NODE-07' }
    Mock Get-CimInstance { $system } -ParameterFilter { $ClassName -eq 'Win32_ComputerSystem' }
    Mock Invoke-CimMethod { [pscustomobject]@{ ReturnValue = 0 } }
    Invoke-Action 'domain.leave-local' | Should -Be '{"left":true}'
    Should -Invoke Invoke-CimMethod -Exactly -Times 1 -ParameterFilter { $InputObject.Name -eq 'NODE-07' -and $MethodName -eq 'UnjoinDomainOrWorkgroup' -and $Arguments.Count -eq 1 -and $Arguments.FUnjoinOptions -eq 0 -and $Arguments.FUnjoinOptions -is [uint32] }
    Should -Invoke Invoke-CimMethod -Exactly -Times 1 -ParameterFilter { $MethodName -eq 'JoinDomainOrWorkgroup' -and $Arguments.Name -eq 'WORKGROUP' -and $Arguments.FJoinOptions -eq 0 -and -not $Arguments.ContainsKey('Password') }
  }
  It 'domain.leave-local reports the return code, changes nothing on a machine in no domain, and fails when the workgroup cannot be joined' {
    Mock Get-CimInstance { [pscustomobject]@{ PartOfDomain = $true; Name = 'NODE-07' } } -ParameterFilter { $ClassName -eq 'Win32_ComputerSystem' }
    Mock Invoke-CimMethod { [pscustomobject]@{ ReturnValue = 5 } } -ParameterFilter { $MethodName -eq 'UnjoinDomainOrWorkgroup' }
    $out = Invoke-ActionJson 'domain.leave-local'
    "$($out.left) $($out.code)" | Should -Be 'False 5'
    Mock Invoke-CimMethod { [pscustomobject]@{ ReturnValue = 0 } } -ParameterFilter { $MethodName -eq 'UnjoinDomainOrWorkgroup' }
    Mock Invoke-CimMethod { [pscustomobject]@{ ReturnValue = 1326 } } -ParameterFilter { $MethodName -eq 'JoinDomainOrWorkgroup' }
    { Invoke-Action 'domain.leave-local' } | Should -Throw -ExpectedMessage 'left the domain, but JoinDomainOrWorkgroup WORKGROUP returned 1326'
    Mock Get-CimInstance { [pscustomobject]@{ PartOfDomain = $false; Name = 'NODE-07' } } -ParameterFilter { $ClassName -eq 'Win32_ComputerSystem' }
    Invoke-Action 'domain.leave-local' | Should -Be '{"left":true}'
    Should -Invoke Invoke-CimMethod -Exactly -Times 3
  }
}

Describe 'containerd.register, restart' {
  # The native tools' actions: the argument vector each gets, and the failure its exit code makes.
  It '<Action> runs <Tool> with its arguments and prints {}' -ForEach @(
    @{ Action = 'containerd.register'; Tool = 'containerd.exe'; Argv = @('--register-service', '--config', 'C:\Program Files\containerd\config.toml', '--log-file', 'C:\ProgramData\containerd\containerd.log') }
    @{ Action = 'restart'; Tool = 'shutdown.exe'; Argv = @('/r', '/t', '5', '/d', 'p:4:1', '/c', 'machineadm: the Containers feature needs a restart') }
  ) {
    Invoke-Action $Action | Should -Be '{}'
    $calls = Get-NativeCalls
    $calls | Should -HaveCount 1
    $calls[0] | Should -Be (@($Tool) + $Argv)
  }
  It '<Action> throws with the exit code of <Tool>' -ForEach @(
    @{ Action = 'containerd.register'; Tool = 'containerd.exe'; Message = 'containerd --register-service exited with code 5' }
    @{ Action = 'restart'; Tool = 'shutdown.exe'; Message = 'shutdown.exe exited with code 5' }
  ) {
    $env:NATIVE_EXIT = '5'
    { Invoke-Action $Action } | Should -Throw -ExpectedMessage $Message
  }
}

Describe 'domain.join, domain.join-offline' {
  It 'domain.join reads the password from the pipeline ($input) and gives Add-Computer a credential' {
    Mock Add-Computer { }
    $hex = [Convert]::ToHexString([System.Text.Encoding]::UTF8.GetBytes('pä’’ss $(x)'))
    Invoke-Action 'domain.join' "$hex" | Should -Be '{"joined":true}'
    Should -Invoke Add-Computer -Exactly -Times 1 -ParameterFilter {
      $DomainName -eq 'corp.example' -and $Credential.UserName -eq 'CORP\k8s-joiner' -and $Credential.GetNetworkCredential().Password -eq 'pä’’ss $(x)' -and
      $OUPath -eq 'OU=Nodes,DC=corp,DC=example' -and $Force -and -not $Restart
    }
  }
  It 'domain.join-offline runs djoin /requestODJ for the local OS and reports success' {
    Invoke-Action 'domain.join-offline' | Should -Be '{"joined":true,"code":0,"message":""}'
    (Get-NativeCalls)[0] | Should -Be @('djoin.exe', '/requestODJ', '/loadfile', 'C:\ProgramData\machineadm\run\domain-join.odj', '/windowspath', 'C:\Windows', '/localos')
  }
  It 'domain.join-offline reports djoin''s exit code and output (stderr too) without throwing' {
    $env:NATIVE_EXIT = '2'
    $env:NATIVE_STDERR = 'The system cannot find the file specified.'
    $out = Invoke-ActionJson 'domain.join-offline'
    $out.joined | Should -BeFalse
    $out.code | Should -Be 2
    $out.message | Should -BeLike '*The system cannot find the file specified.*'
  }
}
}
